"""``rescorer task=bundle task.tuned=PATH``: a tuned rescorer and the models it needs, in one directory to copy."""
from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..tuned.bundle import bundle
from . import plain


def run(cfg: Any) -> dict[str, Any]:
    task = plain(cfg.task)
    if not task.get("tuned"):
        raise ConfigError("task.tuned is not set: name the tuned.yaml to bundle (task.tuned=PATH)")
    return bundle(task["tuned"], cfg.out_dir, models=task.get("models"))
