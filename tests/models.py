"""Tiny random-weight models (tokenizers trained offline on the shipped demo texts), built once per session."""
from __future__ import annotations

from pathlib import Path

import pytest

from rescorer import read_nbest
from rescorer.devtools import build_model

from .conftest import DEMO


def demo_texts() -> list[str]:
    nbest = read_nbest(DEMO / "dev_other", refs=DEMO / "dev_other" / "ref.trn")
    return [u.ref for u in nbest] + [h.text for u in nbest for h in u.hyps[:5]]


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory) -> dict[str, Path]:
    """``{arch: directory}`` for every architecture the scorers support, tiny and random."""
    root = tmp_path_factory.mktemp("models")
    texts = demo_texts()
    archs = ("bert", "roberta", "distilbert", "albert", "electra", "modernbert", "gpt2", "llama")
    return {arch: build_model(arch, "tiny", texts, root / arch, vocab_size=800) for arch in archs}


@pytest.fixture(scope="session")
def tiny_causal(tmp_path_factory) -> Path:
    """A tiny random GPT-2: a real model to score with in seconds."""
    return build_model("gpt2", "tiny", demo_texts(), tmp_path_factory.mktemp("models") / "gpt2", vocab_size=800)
