"""Where the real data sets live: ``$RESCORER_DATA``, else ``../shared/data`` beside the repository.

The same rule as ``conf/paths/default.yaml`` (``${paths.data}``), for code that does not compose a config.
"""
from __future__ import annotations

import os
from pathlib import Path

DATA_ENV = "RESCORER_DATA"
REPOSITORY = Path(__file__).resolve().parent.parent


def data_root() -> Path:
    """The data root: ``$RESCORER_DATA`` if set (and not empty), else ``<repository>/../shared/data``."""
    return Path(os.environ.get(DATA_ENV) or REPOSITORY.parent / "shared" / "data")
