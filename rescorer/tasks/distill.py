"""``rescorer task=distill``: train a maskless student on a teacher (pll or ll), then compare the two on ``data``
(:func:`rescorer.studies.distill.distill_student`)."""
from __future__ import annotations

from typing import Any

from ..studies.distill import distill_student
from . import data_of, plain


def run(cfg: Any) -> dict[str, Any]:
    task = plain(cfg.task)
    sets = data_of(cfg).sets if task["heldout"] else {}
    return distill_student(task, cfg.out_dir, plain(cfg.engine), cfg.data.name, sets)
