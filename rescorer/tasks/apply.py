"""``rescorer task=apply task.tuned=PATH``: re-rank new N-best lists (references optional) with a tuned rescorer —
the sets of ``data``, or with ``task.inputs`` a corpus of shards streamed to ``out_dir/shards/``."""
from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..pipeline.api import apply
from . import data_of, plain, run_options


def run(cfg: Any) -> dict[str, Any]:
    task = plain(cfg.task)
    if not task.get("tuned"):
        raise ConfigError("task.tuned is not set: name the tuned.yaml a task=rescore run wrote (task.tuned=PATH)")
    inputs = task.get("inputs")
    if inputs is None:
        corpus = data_of(cfg)
        sets, data = dict(corpus.sets), corpus.name
    else:  # the report is named after the inputs, not after a data group they do not come from
        sets, data = None, ", ".join(map(str, inputs)) if isinstance(inputs, list) else str(inputs)
    return apply(sets, task["tuned"], out_dir=cfg.out_dir, engine=plain(cfg.engine),
                 accept_changed_models=task.get("accept_changed_models", False), run=run_options(cfg),
                 models=task.get("models"), data=data, inputs=inputs, fmt=task.get("fmt", "auto"),
                 chunk=task.get("chunk", 10_000), every=task.get("every", 1), top=task.get("top")).report
