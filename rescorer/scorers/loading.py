"""Load Hugging Face models and tokenizers safely (no remote code unless asked), and fingerprint them."""
from __future__ import annotations

import functools
import hashlib
import os
import re
from pathlib import Path
from typing import Any

from msgspec import Raw, ValidationError

from ..errors import ConfigError, RescorerError, ScorerError

_FINGERPRINTED = ("*.safetensors", "*.bin", "*.gguf", "*.pt", "*.json", "*.model", "*.txt")
PICKLES = ("*.bin", "*.pt", "*.pth", "*.ckpt", "*.pkl")  # weights saved by torch.save: pickles
MAX_JSON_NESTING = 100  # levels of a model's JSON file (a config or tokenizer has under ten)
HUB_PROBE_SECONDS = 2.0  # how long to wait for the hub before calling it out of reach
DEVICES = r"auto|cpu|mps|cuda(:\d+)?"  # where a model may run (``engine.device``), as a pattern
DEVICE_NAMES = "auto, cpu, mps, cuda or cuda:N"
DTYPES = ("auto", "fp32", "float32", "bf16", "bfloat16", "fp16", "float16")  # ``engine.dtype``


def resolve_device(device: str = "auto") -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        torch.device(device)
    except (RuntimeError, TypeError):
        raise ScorerError(f"unknown device {device!r} (choose {DEVICE_NAMES})") from None
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ScorerError(f"device={device!r} but CUDA is not available")
    return device


def resolve_dtype(dtype: str, device: str) -> Any:
    """``auto``: fp32 on CPU (bf16 is slower there and moves scores), bf16 (else fp16) autocast on GPU."""
    import torch

    if dtype == "auto":
        if not device.startswith("cuda"):
            return torch.float32
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    names = {"fp32": torch.float32, "float32": torch.float32, "bf16": torch.bfloat16, "bfloat16": torch.bfloat16,
             "fp16": torch.float16, "float16": torch.float16}
    if dtype not in names:
        raise ScorerError(f"unknown dtype {dtype!r} (choose {', '.join(DTYPES)})")
    return names[dtype]


def offline() -> bool:
    """True when the user asked Hugging Face to stay offline (read now, not at import time)."""
    return any(os.environ.get(v, "").lower() in ("1", "true", "yes", "on") for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def looks_like_hub_name(name: str) -> bool:
    """``org/name`` or ``name`` as the Hugging Face hub spells them, and not a path into a local directory
    (``models/gtp2`` where ``models/`` exists is a misspelt local path, not a hub name)."""
    if not re.fullmatch(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?", name) or name.endswith((".gguf", ".bin")):
        return False
    return "/" not in name or not Path(name.split("/")[0]).exists()


@functools.lru_cache(maxsize=1)
def hub_reachable() -> bool:
    """Whether the Hugging Face hub answers within ``HUB_PROBE_SECONDS`` (asked once per process, through the hub
    client's own session and proxies)."""
    from huggingface_hub import constants
    from huggingface_hub.utils import get_session

    try:
        get_session().head(constants.ENDPOINT, timeout=HUB_PROBE_SECONDS)
    except Exception:  # noqa: BLE001 - DNS, connection, TLS or proxy failure: all mean out of reach
        return False
    return True


def in_hub_cache(name: str, filename: str, revision: str | None = None) -> bool:
    """Whether ``filename`` of the hub model ``name`` is in the local Hugging Face cache."""
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(name, filename, revision=revision), str)


def local_only(name: str, revision: str | None = None, gguf_file: str | None = None) -> bool:
    """Whether ``name`` (a path, or a hub name) loads from local files only: a path, or a hub name while the hub is
    off (``HF_HUB_OFFLINE``) or out of reach. A name that is neither a path nor cached then fails at once."""
    if Path(name).expanduser().exists():
        return True
    if not looks_like_hub_name(name):
        raise ScorerError(f"model {name!r}: no such file or directory (and not a hub name)")
    if not offline() and hub_reachable():
        return False
    if in_hub_cache(name, gguf_file or "config.json", revision):
        return True
    why = "Hugging Face is set offline (HF_HUB_OFFLINE)" if offline() else "the Hugging Face hub cannot be reached"
    raise ConfigError(f"model {name!r} is neither a local directory nor in the local Hugging Face cache, and {why}: "
                      f"pass a local directory, or download it first where there is network "
                      f"(`hf download {name} --local-dir DIR`)")


def load_config(name: str, revision: str | None = None) -> Any:
    """The transformers config of a local model directory or hub name; what is not a model is one line."""
    from transformers import AutoConfig

    path = Path(name).expanduser()
    try:
        return AutoConfig.from_pretrained(str(path) if path.exists() else name, revision=revision,
                                          local_files_only=local_only(name, revision))
    except RescorerError:
        raise
    except Exception as err:  # noqa: BLE001 - transformers raises any kind at a file it cannot read
        raise unloadable(name, path, err) from None


def load_pretrained(auto_class: Any, name: str, *, revision: str | None = None, gguf_file: str | None = None,
                    trust_remote_code: bool = False) -> tuple[Any, Any]:
    """(tokenizer, model in eval mode) from a local directory, a ``.gguf`` file or a hub name (``local_only``);
    weights only from safetensors (or GGUF): a pickle runs code as it is read, so none is ever read."""
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    path = Path(name).expanduser()
    if path.suffix == ".gguf" and path.is_file():
        path, gguf_file = path.parent, path.name
    kwargs: dict[str, Any] = {"trust_remote_code": trust_remote_code}
    if revision:
        kwargs["revision"] = revision
    if gguf_file:
        kwargs["gguf_file"] = gguf_file
    elif path.is_dir():
        check_safetensors(name, path)
    source = str(path) if path.exists() else name
    if local_only(name, revision, gguf_file):
        kwargs["local_files_only"] = True
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
        model = auto_class.from_pretrained(source, **kwargs, **({} if gguf_file else {"use_safetensors": True}))
    except RescorerError:
        raise
    except Exception as err:  # noqa: BLE001 - transformers and tokenizers raise any kind at a file they cannot read
        raise unloadable(name, path, err) from None
    if not getattr(tokenizer, "is_fast", False):
        raise ScorerError(f"model {name!r} has no fast tokenizer (word boundaries need one)")
    model.eval()
    return tokenizer, model


def check_safetensors(name: str, folder: Path) -> None:
    """Refuse a model directory whose weights are pickles (``pytorch_model.bin``, which runs code as it is read) and
    no safetensors (a directory without either is left to transformers to say what it lacks)."""
    pickles = [] if any(folder.glob("*.safetensors")) else sorted(f.name for p in PICKLES for f in folder.glob(p))
    if pickles:
        raise ScorerError(f"model {name!r}: only safetensors weights are loaded, and {folder} holds none: "
                          f"{', '.join(pickles)} is a pickle, which can run code as it is read; where you trust it, "
                          "load it and save_pretrained() it, which writes model.safetensors")


def unloadable(name: str, path: Path, err: BaseException) -> ScorerError:
    """The one-line error of a model transformers could not load: the file of a local model that is the cause where
    one is (:func:`json_problem`), else what transformers said."""
    problem = json_problem(path) if path.is_dir() else None
    if problem:
        return ScorerError(f"cannot load model {name!r}: {problem}")
    said = str(err).splitlines()[0] if str(err).strip() else ""
    said = said if isinstance(err, (OSError, ValueError, ImportError)) else f"{type(err).__name__}: {said}"
    hint = ("" if path.exists() else
            f" If this machine is offline, download it where there is network "
            f"(`hf download {name} --local-dir DIR`) and pass the directory as the model.")
    return ScorerError(f"cannot load model {name!r}: {said}.{hint}")


def json_problem(folder: Path) -> str | None:
    """What makes a JSON file of a model directory unreadable to transformers, naming it: nesting its recursive
    reader cannot hold, or a tokenizer.json without ``added_tokens`` (which transformers needs and the tokenizers
    library takes as none); None when no file is so."""
    from ..io.codec import DecodeError, decoder, nesting

    for file in sorted(folder.glob("*.json")):
        if nesting(file.read_bytes())[0] > MAX_JSON_NESTING:
            return f"{file}: JSON nested too deep (over {MAX_JSON_NESTING} levels)"
    tokenizer = folder / "tokenizer.json"
    try:
        keys = decoder(dict[str, Raw])(tokenizer.read_bytes()) if tokenizer.is_file() else {"added_tokens": None}
    except (DecodeError, ValidationError):
        return None
    if "added_tokens" not in keys:
        return f'{tokenizer}: no "added_tokens", which transformers needs: add "added_tokens": [] (none) to it'
    return None


def load_named(auto_class: Any, name: str, fingerprint_of: str | None = None,
               **options: Any) -> tuple[Any, Any, str]:
    """(tokenizer, model, tag): :func:`load_pretrained`, with what a signature calls the model. A local model is
    named by the :func:`fingerprint` of the bytes it was loaded from: its files (``model_files`` of
    ``fingerprint_of``, else ``name``) are hashed as they are loaded, never taken from the hash cache, and one
    changed before the model is in memory is an error. So the name never depends on where the model lies (a moved or
    copied model keeps its scores), and no score is kept under a name other bytes have. A hub model is named by its
    name and commit."""
    from ..filehash import read_unchanged

    files = model_files(fingerprint_of or name)
    if files is None:
        tokenizer, model = load_pretrained(auto_class, name, **options)
        return tokenizer, model, f"{name}@{getattr(model.config, '_commit_hash', None) or 'hub'}"
    with read_unchanged(files, f"model {name!r}") as digests:
        tokenizer, model = load_pretrained(auto_class, name, **options)
    return tokenizer, model, fingerprint(files, digests)


def model_files(name: str) -> list[Path] | None:
    """The files that make a local model what it is (weights, config, tokenizer; a .gguf file alone); None for a
    name that is no local model."""
    path = Path(name).expanduser()
    if path.suffix == ".gguf" and path.is_file():
        return [path]
    if path.is_dir():
        return sorted({f for pattern in _FINGERPRINTED for f in path.glob(pattern) if f.is_file()})
    return None


def fingerprint(files: list[Path], digests: list[str]) -> str:
    """A local model's short name: a hash of its files' names and content hashes (``digests``), never of where
    they lie."""
    digest = hashlib.blake2b(digest_size=16)
    for file, content in zip(files, digests):
        digest.update(f"{file.name}\0{content}\n".encode())
    return digest.hexdigest()[:12]


def local_fingerprint(name: str) -> str | None:
    """:func:`fingerprint` of a local model (a directory or a .gguf file) without loading it, its files' hashes
    taken from the cache where their stamps are unchanged (``rescorer.filehash``); None for a hub name."""
    from ..filehash import file_digests

    files = model_files(name)
    return None if files is None else fingerprint(files, file_digests(files))
