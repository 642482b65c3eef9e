"""``rescorer task=rescore``: add LM columns, tune interpolation weights on dev, apply them to every set, report."""
from __future__ import annotations

from typing import Any

from ..combine import Search
from ..pipeline import read_sets, rescore
from . import data_of, out_dir_of, plain, run_options, scorers_of


def run(cfg: Any) -> dict[str, Any]:
    task = plain(cfg.task)
    search = Search.of(plain(cfg.search))
    corpus = data_of(cfg)
    sets, metric = read_sets(corpus)
    out_dir = out_dir_of(cfg, sets)
    return rescore(sets=sets, dev=task["tune_on"], scorers=scorers_of(cfg), metric=metric, base=task["base"],
                   columns=task["columns"], retune=task["retune"], search=search, out_dir=out_dir, run=run_options(cfg),
                   data=corpus.name).report.to_json()
