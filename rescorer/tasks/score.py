"""``rescorer task=score``: add LM score columns to every hypothesis and write the lists back, with a PPL table."""
from __future__ import annotations

from typing import Any

from ..pipeline import read_sets, score_sets
from . import data_of, out_dir_of, scorers_of


def run(cfg: Any) -> dict[str, Any]:
    corpus = data_of(cfg)
    sets, _ = read_sets(corpus)
    out_dir = out_dir_of(cfg, sets)
    return score_sets(sets, scorers_of(cfg), out_dir, corpus.name)
