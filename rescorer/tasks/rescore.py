"""``rescorer task=rescore``: add LM columns, tune interpolation weights on dev, apply them to every set, report."""
from __future__ import annotations

from typing import Any

from ..combine import Column
from ..pipeline import read_sets, rescore
from . import data_of, plain, scorers_of


def run(cfg: Any) -> dict[str, Any]:
    task = plain(cfg.task)
    corpus = data_of(cfg)
    sets, metric = read_sets(corpus)
    tuned = task.get("columns")
    columns = [Column.of(name, spec) for name, spec in tuned.items()] if tuned else None
    base = dict(task["base"])
    return rescore(sets, scorers_of(cfg), metric, cfg.out_dir, Column.of(base.pop("name", "score"), base), columns,
                   plain(cfg.search), task.get("tune_on"), task.get("bootstrap", 1000), task.get("seed", 0),
                   data=corpus.name, halves=task.get("halves", 0))
