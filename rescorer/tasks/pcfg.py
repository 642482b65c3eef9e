"""``rescorer task=pcfg``: a known grammar as ground truth (:func:`rescorer.studies.pcfg.run_experiment`)."""
from __future__ import annotations

from typing import Any

from ..studies.pcfg import run_experiment
from . import plain


def run(cfg: Any) -> dict[str, Any]:
    return run_experiment(plain(cfg.task), cfg.out_dir, plain(cfg.engine))
