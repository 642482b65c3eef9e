"""``rescorer task=convert task.inputs=PATH``: N-best lists in another format, cut, thinned or split into shards."""
from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..io.convert import Conversion, write_converted
from ..io.inputs import TAKES
from . import plain


def run(cfg: Any) -> dict[str, Any]:
    task = plain(cfg.task)
    if task.get("inputs") is None:
        raise ConfigError(f"task.inputs is not set: name the lists to convert ({TAKES}; task.inputs=PATH)")
    options = Conversion.of(task, "task.")
    return write_converted(task["inputs"], cfg.out_dir, options)
