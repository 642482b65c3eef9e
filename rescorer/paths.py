"""Where things are: the configs, the demo excerpt, ``${root:}``, the real data sets and the user cache.

A source checkout keeps ``conf/`` and ``recipes/demo/data`` at the repository top; an installed wheel ships
them inside the package (``rescorer/conf``, ``rescorer/demo``), so the same code finds them either way.
The data rule is the same as ``conf/paths/default.yaml`` (``${paths.data}``), for code that does not compose a config.
"""
from __future__ import annotations

import os
from pathlib import Path

DATA_ENV = "RESCORER_DATA"
PACKAGE = Path(__file__).resolve().parent
ROOT = PACKAGE.parent  # the repository root of a source checkout (an installed package's site-packages)
INSTALLED = (PACKAGE / "conf" / "config.yaml").is_file()  # a wheel ships conf/ inside the package
CONF = PACKAGE / "conf" if INSTALLED else ROOT / "conf"
DEMO = PACKAGE / "demo" if INSTALLED else ROOT / "recipes" / "demo" / "data"


def root() -> Path:
    """What ``${root:}`` means: the repository root of a source checkout; for an installed package, which has
    no repository, the current directory (where ``exp/`` goes too)."""
    return Path.cwd() if INSTALLED else ROOT


def data_root() -> Path:
    """The data root: ``$RESCORER_DATA`` if set (and not empty), else ``${root:}/../shared/data``."""
    return Path(os.environ.get(DATA_ENV) or root().parent / "shared" / "data")


def cache_dir() -> Path:
    """The user cache (built models, file hashes): ``$RESCORER_CACHE`` if set (and not empty), else
    ``$XDG_CACHE_HOME/rescorer`` (``~/.cache/rescorer`` without it)."""
    given = os.environ.get("RESCORER_CACHE")
    return Path(given) if given else Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / "rescorer"
