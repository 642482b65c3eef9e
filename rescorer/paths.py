"""Where things are: the repository root, and the real data sets (``$RESCORER_DATA``, else ``../shared/data``).

The data rule is the same as ``conf/paths/default.yaml`` (``${paths.data}``), for code that does not compose a config.
"""
from __future__ import annotations

import os
from pathlib import Path

DATA_ENV = "RESCORER_DATA"
ROOT = Path(__file__).resolve().parent.parent


def data_root() -> Path:
    """The data root: ``$RESCORER_DATA`` if set (and not empty), else ``<repository>/../shared/data``."""
    return Path(os.environ.get(DATA_ENV) or ROOT.parent / "shared" / "data")
