"""Errors that reach the user: each names the file, line and offending value."""
from __future__ import annotations

import difflib
import os
from typing import Iterable


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
        shown = "" if value is None else f": {short_repr(value)}"
        super().__init__(f"{where}: {problem}{shown}")


class DataFormatError(NBestFormatError):
    """Another input file (minimal pairs, a sentence set) that cannot be read as it claims to be."""


class ConfigError(RescorerError, ValueError):
    """A configuration value that cannot work."""


class UnknownNameError(ConfigError):
    """A misspelt name (a config group, option or key; a variant): the bad names, the closest valid one when one is
    close, and the choices."""

    def __init__(self, what: str, names: object, choices: Iterable[str]):
        single = isinstance(names, str) or not isinstance(names, Iterable)
        self.names = [str(names)] if single else [str(name) for name in names]
        self.choices = list(dict.fromkeys(str(c) for c in choices if not str(c).startswith("_")))  # not _target_
        self.suggestions = list(dict.fromkeys(match for name in self.names
                                              for match in difflib.get_close_matches(name, self.choices, n=1)))
        plural = "s" if len(self.names) > 1 else ""
        hint = f", did you mean {', '.join(map(repr, self.suggestions))}?" if self.suggestions else ""
        super().__init__(f"unknown {what}{plural} {', '.join(map(repr, self.names))}{hint} "
                         f"(choose from {', '.join(self.choices)})")


def check_known(what: str, given: Iterable[str], known: Iterable[str]) -> None:
    """Raise :class:`UnknownNameError` for the names of ``given`` (in order) that are not ``known``."""
    known = set(known)
    unknown = [name for name in given if name not in known]
    if unknown and not known:
        raise ConfigError(f"unknown {what} {unknown[0]!r}: there are none to give")
    if unknown:
        raise UnknownNameError(what, unknown, sorted(known))


class StoreError(RescorerError):
    """A score store that cannot be opened, read or written (it names the file and says what to do)."""


class ScorerError(RescorerError, RuntimeError):
    """A model or scorer that cannot be loaded or run."""


def short_repr(value: object, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters for a one-line error."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
