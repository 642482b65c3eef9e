"""What every benchmark shares: real hypotheses, random-weight models of real sizes, best-of timing, JSON out."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from ..files import record_text, write_text
from ..paths import ROOT, data_root


def bench_texts(n: int) -> tuple[list[str], str]:
    """``n`` distinct real hypotheses spread over LibriSpeech dev_other (../shared), else the shipped excerpt."""
    from ..io import read_nbest

    shared = data_root() / "librispeech-espnet-30best" / "dev_other"
    source = shared if shared.exists() else ROOT / "recipes" / "demo" / "data" / "dev_other"
    texts = list(dict.fromkeys(t for t in read_nbest(source).texts() if t))
    step = max(1, len(texts) // n)
    return texts[::step][:n], str(source)


def bench_model(arch: str, size: str, cache: Path, tokenizer_dir: str | None = None) -> Path:
    """A random ``arch`` model of ``size`` saved under ``cache`` (built once); BERT gets ``tokenizer_dir``'s
    tokenizer, else the real uncased one from the MiniLM package when it is installed."""
    from transformers import AutoTokenizer

    from ..devtools import build_model, real_bert_tokenizer

    texts, _ = bench_texts(5000)
    vocab = 30522 if arch == "bert" else 50257
    tokenizer = None
    if arch == "bert":
        tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir) if tokenizer_dir else real_bert_tokenizer()
    name = f"{arch}-{size}" + ("-uncased" if tokenizer is not None else "")
    return build_model(arch, size, texts, cache / name, vocab_size=vocab, tokenizer=tokenizer)


def best_time(fn: Callable[[], Any], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def stamp(**fields: Any) -> dict[str, Any]:
    """``fields`` with the date and the torch version."""
    import torch

    return {**fields, "torch": torch.__version__, "date": time.strftime("%Y-%m-%d")}


def save(result: dict[str, Any], out_dir: str | Path, name: str) -> dict[str, Any]:
    write_text(Path(out_dir) / name, record_text(result, indent=2) + "\n")
    return result
