"""``rescorer task=rescore``: add LM columns, tune interpolation weights on dev, apply them to every set, report."""
from __future__ import annotations

from typing import Any

from ..combine import Search
from ..combine.interpolate import PENALTIES
from ..options import Option
from ..pipeline import read_sets, rescore
from ..pipeline.sets import one_of_the_sets
from . import data_of, out_dir_of, plain, run_options, scorers_of

OPTIONS = {"task.base": Option("mapping", example="{name, penalty, alpha}"),
           "task.base.name": Option("text", null=True), "task.base.penalty": Option("text", choices=PENALTIES),
           "task.base.alpha": Option("number")}


def run(cfg: Any) -> dict[str, Any]:
    task = plain(cfg.task)
    search = Search.of(plain(cfg.search))
    corpus = data_of(cfg)
    if task["tune_on"] is not None:  # a set's name here (the library's dev may also be a list of its own)
        one_of_the_sets(task["tune_on"], list(corpus.sets))
    sets, metric = read_sets(corpus)
    out_dir = out_dir_of(cfg, sets)
    return rescore(sets=sets, dev=task["tune_on"], scorers=scorers_of(cfg), metric=metric, base=task["base"],
                   columns=task["columns"], retune=task["retune"], search=search, out_dir=out_dir, run=run_options(cfg),
                   data=corpus.name).report.to_json()
