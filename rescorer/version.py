"""The package version and the signature strings that say how a number was made (their own module, so any layer
can name them without importing the package's API)."""
from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
TOOL = f"rescorer:{__version__}"  # the tool's own field in every signature


def signature(*parts: Any, **fields: Any) -> str:
    """``part|…|key:value|…``, sacrebleu-style: the parts as they are, then each field as ``key:value``."""
    return "|".join([*(str(part) for part in parts), *(f"{key}:{value}" for key, value in fields.items())])
