"""``rescorer task=rescore``: add LM columns, tune interpolation weights on dev, apply them to every set, report."""
from __future__ import annotations

from typing import Any

from ..combine import Column
from ..options import Option
from ..pipeline import read_sets, rescore_lists
from . import data_of, out_dir_of, plain, scorers_of


def run(cfg: Any) -> dict[str, Any]:
    task = plain(cfg.task)
    corpus = data_of(cfg)
    sets, metric = read_sets(corpus)
    out_dir = out_dir_of(cfg, sets)
    columns = [Column.of(name, spec) for name, spec in task["columns"].items()] if task.get("columns") else None
    base = task["base"]  # a column name, or {name, penalty, alpha}
    base = {"name": base} if isinstance(base, str) else dict(Option("mapping").check("task.base", base))
    name = base.pop("name", None)
    return rescore_lists(sets, scorers_of(cfg), metric, Column.of(name, {"penalty": "none", **base}) if name else None,
                         columns,
                         search=plain(cfg.search), tune_on=task.get("tune_on"), bootstrap=task.get("bootstrap", 1000),
                         seed=task.get("seed", 0), data=corpus.name, out_dir=out_dir,
                         halves=task.get("halves", 0)).report
