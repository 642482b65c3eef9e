"""Errors that reach the user: each names the file, line and offending value."""
from __future__ import annotations

import os


class RescorerError(Exception):
    """Base class for every error the command line reports without a traceback."""


class NBestFormatError(RescorerError, ValueError):
    """An N-best or reference file that cannot be read as it claims to be."""

    def __init__(self, path: str | os.PathLike, line: int | None, problem: str, value: object = None):
        self.path = str(path)
        self.line = line
        self.problem = problem
        self.value = value
        where = f"{self.path}:{line}" if line is not None else self.path
        shown = "" if value is None else f": {_show(value)}"
        super().__init__(f"{where}: {problem}{shown}")


class DataFormatError(NBestFormatError):
    """Another input file (minimal pairs, a sentence set) that cannot be read as it claims to be."""


class ConfigError(RescorerError, ValueError):
    """A configuration value that cannot work."""


class StoreError(RescorerError):
    """A score store that cannot be opened, read or written (it names the file and says what to do)."""


class ScorerError(RescorerError, RuntimeError):
    """A model or scorer that cannot be loaded or run."""


def _show(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
