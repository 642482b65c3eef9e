"""What the library tells people goes through the ``rescorer`` logger: tables, summaries and progress at INFO,
warnings at WARNING (each already reads ``rescorer: warning: …``). The command line shows INFO on stdout and warnings
on stderr; a Python program decides for itself (Python shows warnings and not INFO until it configures logging, and
``logging.disable()`` silences both, progress bars included)."""
from __future__ import annotations

import io
import logging
import sys
from typing import Any

from tqdm.auto import tqdm

from .safetext import visible

LOGGER = logging.getLogger("rescorer")


def info(text: str) -> None:
    LOGGER.info("%s", text)


def warning(text: str) -> None:
    """A warning in one line: what came from the inputs in it (names, texts) cannot move the cursor or break the
    line (:func:`~rescorer.safetext.visible`)."""
    LOGGER.warning("rescorer: warning: %s", visible(text))


def rendered(renderable: Any, width: int) -> str:
    """A rich renderable (a table) as plain text ``width`` columns wide."""
    from rich.console import Console

    out = io.StringIO()
    Console(file=out, width=width, color_system=None, force_terminal=False).print(renderable)
    return out.getvalue().rstrip("\n")


class Terminal(logging.Handler):
    """INFO and below to stdout, warnings and errors to stderr, each message as it is, written around any progress
    bar on the screen (cleared and redrawn below it)."""

    def emit(self, record: logging.LogRecord) -> None:
        stream = sys.stderr if record.levelno >= logging.WARNING else sys.stdout
        tqdm.write(self.format(record), file=stream)
        stream.flush()


def writes_around_bars() -> bool:
    """Whether a progress bar can share the screen with the library's messages: they are shown at INFO, and only by
    the command line's handler (a program's own handlers would write into the bar)."""
    return (LOGGER.isEnabledFor(logging.INFO) and not LOGGER.propagate
            and any(isinstance(handler, Terminal) for handler in LOGGER.handlers))


def to_terminal() -> None:
    """Show the library's messages as the command line does (called by it, once per run)."""
    LOGGER.handlers = [Terminal()]
    LOGGER.setLevel(logging.INFO)
    LOGGER.propagate = False
