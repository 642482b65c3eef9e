"""``rescorer task=apply task.tuned=PATH``: re-rank new N-best lists (references optional) with a tuned rescorer —
the sets of ``data``, or with ``task.inputs`` a corpus of shards streamed to ``out_dir/shards/``."""
from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..io.sets import SUBSET
from ..options import FLAG, Option
from ..pipeline.api import apply
from ..io.inputs import INPUTS
from . import data_given, data_of, plain, run_options

OPTIONS = {"task.tuned": Option("path", null=True), "task.accept_changed_models": FLAG,
           "task.inputs": Option("paths", null=True, example=INPUTS.example),
           "task.chunk": Option("integer", low=1),
           "task.every": SUBSET["every"], "task.top": SUBSET["top"]}


def run(cfg: Any) -> dict[str, Any]:
    task = plain(cfg.task)
    if not task.get("tuned"):
        raise ConfigError("task.tuned is not set: name the tuned.yaml a task=rescore run wrote (task.tuned=PATH)")
    inputs = task.get("inputs")
    if inputs is None:
        corpus = data_of(cfg)
        sets, data = dict(corpus.sets), corpus.name
    elif data_given(cfg):
        raise ConfigError("task.inputs and data (data=… or data.sets…) were both given: an apply reads one or the "
                          "other, so give task.inputs=… (shards streamed to out_dir) or data.sets (lists read whole)")
    else:  # the report is named after the inputs, not after a data group they do not come from
        sets, data = None, ", ".join(map(str, inputs)) if isinstance(inputs, list) else str(inputs)
    return apply(sets, task["tuned"], out_dir=cfg.out_dir, engine=plain(cfg.engine),
                 accept_changed_models=task.get("accept_changed_models", False), run=run_options(cfg),
                 models=task.get("models"), data=data, inputs=inputs, fmt=task.get("fmt", "auto"),
                 chunk=task.get("chunk", 10_000), every=task.get("every", 1), top=task.get("top")).report
