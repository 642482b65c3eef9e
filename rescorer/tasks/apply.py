"""``rescorer task=apply task.tuned=PATH``: re-rank new N-best lists (references optional) with a tuned rescorer."""
from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..pipeline.api import apply
from . import data_of, plain, run_options


def run(cfg: Any) -> dict[str, Any]:
    task = plain(cfg.task)
    if not task.get("tuned"):
        raise ConfigError("task.tuned is not set: name the tuned.yaml a task=rescore run wrote (task.tuned=PATH)")
    corpus = data_of(cfg)
    sets = {name: spec.read() for name, spec in corpus.sets.items()}
    return apply(sets, task["tuned"], out_dir=cfg.out_dir, engine=plain(cfg.engine),
                 accept_changed_models=task.get("accept_changed_models", False), run=run_options(cfg),
                 models=task.get("models"), data=corpus.name).report
