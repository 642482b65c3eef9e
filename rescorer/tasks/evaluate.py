"""``rescorer task=evaluate``: baseline (input 1-best) and oracle WER/BLEU of every set."""
from __future__ import annotations

from typing import Any

from ..pipeline import evaluate, read_sets
from . import data_of


def run(cfg: Any) -> dict[str, Any]:
    corpus = data_of(cfg)
    sets, metric = read_sets(corpus)
    return evaluate(sets, metric, cfg.out_dir, corpus.name)
