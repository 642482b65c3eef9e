"""rescorer: rescore ASR/MT N-best lists with language models.

The Python API (README "Python API"): read and write N-best lists (``read_nbest``, ``write_nbest``), score texts
(``load_scorer``), judge them (``wer``, ``bleu``), and the whole job in one call (``rescore``: tune the weights on a
dev list, apply them to the others, get the report and the re-ranked lists); its steps are in ``rescorer.pipeline``,
the shipped models' directories in ``rescorer.shipped``.
Names are imported on first use, so that ``import rescorer`` (and the command's start) stays instant.
"""
from __future__ import annotations

import importlib

from .version import __version__

_HOMES = {
    "pipeline": None, "shipped": None, "load_scorer": "engine", "rescore": "pipeline.api", "apply": "pipeline.api",
    "convert": "io.convert",
    "Rescored": "pipeline.rescore", "Report": "report", "Tuned": "tuned",
    "bleu": "metrics", "wer": "metrics", "Hypothesis": "types", "NBest": "types", "Utterance": "types",
    **dict.fromkeys(("ConfigError", "NBestFormatError", "RescorerError", "ScorerError"), "errors"),
    **dict.fromkeys(("FORMATS", "detect_format", "nbest_from_generate", "read_nbest", "write_nbest"), "io"),
}
__all__ = sorted([*_HOMES, "__version__"])


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'rescorer' has no attribute {name!r}")
    home = _HOMES[name]
    value = importlib.import_module(f".{name}" if home is None else f".{home}", __name__)
    value = value if home is None else getattr(value, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
