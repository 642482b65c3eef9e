"""``rescorer task=rescore``: add LM columns, tune interpolation weights on dev, apply them to every set, report."""
from __future__ import annotations

from typing import Any

from ..pipeline import read_sets, rescore
from . import data_of, out_dir_of, plain, scorers_of


def run(cfg: Any) -> dict[str, Any]:
    task = plain(cfg.task)
    corpus = data_of(cfg)
    sets, metric = read_sets(corpus)
    out_dir = out_dir_of(cfg, sets)
    return rescore(sets=sets, dev=task["tune_on"], scorers=scorers_of(cfg), metric=metric, base=task["base"],
                   columns=task["columns"], search=plain(cfg.search), out_dir=out_dir, bootstrap=task["bootstrap"],
                   seed=task["seed"], data=corpus.name, halves=task["halves"]).report.to_json()
