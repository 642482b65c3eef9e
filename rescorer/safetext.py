"""Text from inputs and configs, made safe to show people: control characters (terminal escapes, bidirectional
overrides, line separators) shown as visible escapes, and nothing active in Markdown, HTML or rich markup. The data
files keep the text as it was; only what a person reads goes through here."""
from __future__ import annotations

import html
import re

# C0 and C1 controls, DEL, bidirectional embeddings/overrides/isolates, the Unicode line and paragraph separators, and
# lone surrogates (no encoding can print them).
HIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
MARKDOWN = re.compile(r"([\\`*_\[\]|~])")  # what Markdown could act on inside a line: code, emphasis, links, cells


def number(value: float, spec: str = ".2f") -> str:
    """``value`` formatted with ``spec``, never as a negative zero (``-0.00`` reads as a loss that is not there)."""
    text = format(value, spec)
    return text.replace("-", "+" if "+" in spec else "", 1) if float(text.rstrip("%")) == 0 else text


def visible(text: object) -> str:
    """``text`` with every control character written as an escape (``\\x1b``, ``\\u202e``), so it cannot move the
    cursor, change the window title, clear the screen, reorder what follows or break a line."""
    return HIDDEN.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(text))


def for_markdown(text: object) -> str:
    """``text`` as inert Markdown inside a line: visible controls, HTML's ``&<>`` as entities, and what could start
    code, emphasis, a link or a table cell backslash-escaped (a cell or a heading shows it literally)."""
    return MARKDOWN.sub(r"\\\1", html.escape(visible(text), quote=False))


def code(text: object) -> str:
    """``text`` as a Markdown code span (shown literally, HTML included): its backtick fence is longer than any
    run of backticks in it."""
    shown = visible(text)
    fence = "`" * (max((len(run) for run in re.findall(r"`+", shown)), default=0) + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def fenced(lines: list[str], info: str = "text") -> str:
    """``lines`` as a Markdown code block whose fence no line can close (longer than any run of backticks in them),
    controls made visible."""
    shown = [visible(line) for line in lines]
    longest = max((len(run) for line in shown for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return "\n".join([fence + info, *shown, fence])
