"""Where things are: the repository root and the real data sets (``$RESCORER_DATA``, else ``../shared/data``)."""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def data_root() -> Path:
    """The directory of the real data sets: ``$RESCORER_DATA`` if set, else ``shared/data`` beside the repository."""
    return Path(os.environ.get("RESCORER_DATA") or ROOT.parent / "shared" / "data")
