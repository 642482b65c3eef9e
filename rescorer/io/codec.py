"""The one JSON codec of every reader and writer: strict JSON (RFC 8259), decoded and encoded by msgspec.

- Decoding refuses what is not JSON: ``NaN``, ``Infinity``, a trailing comma, a lone UTF-16 surrogate escape, bytes
  that are not UTF-8, nesting too deep to hold. A key given twice in one object keeps its last value, as in most JSON
  readers.
- Encoding writes only JSON: a non-finite number has no JSON spelling, so a score is written as the text
  ``"-inf"`` (or ``"inf"``, ``"nan"``), which every reader of scores takes back. The characters other tools take for
  line breaks (U+2028, U+2029, U+0085) are escaped, so that a JSON line stays one line for any JSONL reader.
"""
from __future__ import annotations

import json
import math
import os
import re
from typing import Any, Callable, Iterable, Iterator, Mapping

import msgspec

from ..errors import NBestFormatError
from .common import binary_chunks, iter_lines, read_text

DecodeError = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)  # what bad JSON raises (and is said as)
# An escape in JSON text: a UTF-16 surrogate pair (group 1: a lone surrogate, which no Unicode text holds) or another.
_ESCAPE = re.compile(rb"\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|(u[dD][89a-fA-F][0-9a-fA-F]{2})|.)",
                     re.S)
_STRING = re.compile(rb'"(?:[^"\\]+|\\.?)*(?:"|\Z)', re.S)  # a JSON string (one left open: to the end of the text)
_OPENING, _CLOSING = (ord("["), ord("{")), (ord("]"), ord("}"))
_LINE_BREAKERS = ((b"\xe2\x80\xa8", b"\\u2028"), (b"\xe2\x80\xa9", b"\\u2029"), (b"\xc2\x85", b"\\u0085"))
_ENCODER = msgspec.json.Encoder()


def decoder(kind: Any = Any) -> Callable[[bytes | str], Any]:
    """A fast decoder of JSON documents of type ``kind`` (msgspec types: Structs, ``dict[str, float]``, …): raises
    ``msgspec.ValidationError`` for a value of another type and ``DecodeError`` for text that is no JSON."""
    return msgspec.json.Decoder(kind).decode


_ANY = decoder()


def load_json(text: str | bytes, path: str | os.PathLike, line: int | None = None) -> Any:
    """The JSON value of ``text`` (a whole document, or line ``line`` of ``path``); an error names the file, the line
    and that line's text."""
    try:
        return _ANY(text)
    except DecodeError as err:
        raise json_error(err, text, path, line) from None


def json_lines(path: str | os.PathLike) -> Iterator[tuple[int, Any]]:
    """(number, value) of each line of a JSON-lines file that is not blank, read one at a time; an error names the
    line."""
    for number, line in iter_lines(path):
        if line.strip():
            yield number, load_json(line, path, number)


def json_error(err: BaseException, text: str | bytes, path: str | os.PathLike, line: int | None) -> NBestFormatError:
    """The one-line error for JSON ``text`` that did not decode (``line``: its line in ``path``, else found from
    where the error is)."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as bad:
        return NBestFormatError(path, _line(data, bad.start, line), "not valid UTF-8",
                                data[bad.start : bad.start + 8])
    message, lone = str(err), lone_surrogate(data)
    if isinstance(err, RecursionError):
        problem, at = "invalid JSON (nested too deep)", nesting(data)[1]
    elif lone is not None and (_offset(message) or len(data)) >= lone.start():  # msgspec says it as "truncated"
        problem = f"invalid JSON (the text holds a lone surrogate escape \\{lone[1].decode()}: not valid Unicode)"
        at = lone.start() + 1
    else:
        problem = f"invalid JSON ({message.removeprefix('JSON is malformed: ')})"
        at = len(data.rstrip()) if "truncated" in message else _offset(message)
        if b"Infinity" in data or b"NaN" in data:
            problem += "; NaN and Infinity are not JSON: write such a score as a string, e.g. \"-inf\""
    number = _line(data, at, line)
    rows = data.split(b"\n")
    shown = data if line is not None else rows[min(number or 1, len(rows)) - 1]
    return NBestFormatError(path, number, problem, shown.decode("utf-8").rstrip("\r\n"))


def lone_surrogate(data: bytes | memoryview, cut: bool = False) -> re.Match | None:
    """The first escape of a lone UTF-16 surrogate (``\\ud800`` without its low half after it) in JSON ``data``, or
    None. ``cut``: the text may go on after ``data`` (a window of a document read in parts), so an escape in its last
    six bytes may yet get its low half."""
    last = len(data) - (6 if cut else 0)
    return next((found for found in _ESCAPE.finditer(data) if found[1] and found.end() <= last), None)


def nesting(data: bytes) -> tuple[int, int]:
    """How deep JSON ``data`` nests lists and objects, and the offset just past the first bracket that deep (text in
    strings aside); measured without recursion, so that any depth is."""
    import numpy as np

    blank = np.frombuffer(_STRING.sub(lambda found: b" " * len(found[0]), data), np.uint8)
    depth = np.cumsum(np.isin(blank, _OPENING).astype(np.int64) - np.isin(blank, _CLOSING))
    deepest = int(depth.argmax()) if len(depth) else 0
    return (int(depth[deepest]) if len(depth) else 0), deepest + 1


def _line(data: bytes, at: int | None, line: int | None) -> int | None:
    """The line of byte ``at`` of a document (``line``: the document is that line)."""
    if line is not None or at is None:
        return line
    return data.count(b"\n", 0, max(at - 1, 0)) + 1


def _offset(message: str) -> int | None:
    """The byte offset msgspec names in an error (``… (byte 17)``), if any."""
    _, found, rest = message.rpartition("(byte ")
    digits = rest.rstrip(")")
    return int(digits) if found and digits.isdigit() else None


def encode(value: Any) -> bytes:
    """``value`` as compact JSON, UTF-8, with the line breakers other tools see escaped (see the module)."""
    return _escaped(_ENCODER.encode(value))


def encode_lines(values: Iterable[Any]) -> bytes:
    """Each of ``values`` as one line of JSON (see :func:`encode`), each ended by a newline."""
    return _escaped(_ENCODER.encode_lines(values))


def _escaped(data: bytes) -> bytes:
    """JSON ``data`` with the line breakers other tools see (U+2028, U+2029, U+0085) escaped."""
    if not data.isascii():
        for found, escaped in _LINE_BREAKERS:
            if found in data:
                data = data.replace(found, escaped)
    return data


def json_line(value: Any) -> str:
    """``value`` as one line of JSON text (see :func:`encode`), without its newline."""
    return encode(value).decode("utf-8")


def finite_scores(scores: Mapping[str, float]) -> Mapping[str, float | str]:
    """``scores`` as JSON can hold them: itself when every value is finite, else a copy with each non-finite value
    as its text (``"-inf"``)."""
    if math.isfinite(sum(scores.values())):
        return scores
    return {k: v if math.isfinite(v) else repr(float(v)) for k, v in scores.items()}


def value_text(value: Any) -> str:
    """A decoded JSON value written back as JSON text (a raw score, a field kept as it was read)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def loads(text: str | bytes) -> Any:
    """The value of JSON ``text`` that rescorer itself wrote (kept in a list's meta)."""
    return _ANY(text)


def document(value: Any, indent: int | None, ascii_only: bool = False) -> str:
    """A JSON document laid out as a person or a toolkit wrote it (``indent``; non-ASCII escaped when
    ``ascii_only``), with a final newline."""
    return json.dumps(value, indent=indent, ensure_ascii=ascii_only, allow_nan=False) + "\n"


def document_items(values: Iterable[Any], indent: int | None, ascii_only: bool, first: bool) -> str:
    """Items of a JSON list laid out as :func:`document` lays out the whole list, each after the text that comes
    before it (``first``: the first follows the opening bracket, the others a comma): the list written a piece at a
    time is the same text."""
    pad, comma = ("", ", ") if indent is None else ("\n" + " " * indent, ",")
    out = []
    for value in values:
        text = json.dumps(value, indent=indent, ensure_ascii=ascii_only, allow_nan=False)
        out.append(("[" if first else comma) + pad + (text if indent is None else text.replace("\n", pad)))
        first = False
    return "".join(out)


def document_end(indent: int | None, empty: bool) -> str:
    """What closes a JSON list :func:`document_items` wrote (``empty``: it wrote none), without the final newline."""
    return "[]" if empty else "]" if indent is None else "\n]"


CHUNK = 1 << 20  # bytes of a JSON document read at a time
_SPACE = re.compile(rb"[ \t\r\n]*")


def json_items(path: str | os.PathLike, what: str = "a JSON list") -> Iterator[tuple[int, Any]]:
    """(line, value) of each item of the JSON list that file ``path`` is, at the line where the item starts, decoded
    one at a time from a window of the file (:data:`CHUNK` bytes, or an item where one is longer): a list of any size
    is read in the memory of an item. What is not JSON is refused as :func:`load_json` refuses the whole document
    (read whole then, to say where); a document that is no list, as not ``what``."""
    window = _Window(binary_chunks(path, CHUNK))
    at = window.skip(0)
    if at is None or window.data[at] != ord("["):
        raise _refused(path, window, at, f"expected {what}")
    at, first = at + 1, True
    while True:
        at = window.skip(at)
        if at is not None and first and window.data[at] == ord("]"):
            break
        end = None if at is None else window.end(at)
        try:
            value = _ANY(window.data[at:end] if end is not None else b"")
        except DecodeError:
            raise _refused(path, window, at, "invalid JSON") from None
        yield window.line_of(at), value
        if window.data[end] == ord("]"):
            at = end
            break
        at, first = window.drop(end + 1), False
    if window.skip(at + 1) is not None:
        raise _refused(path, window, at + 1, "invalid JSON")


def _refused(path: str | os.PathLike, window: "_Window", at: int | None, problem: str) -> NBestFormatError:
    """The error of a JSON list refused at byte ``at`` of the window: the whole document's own where it is not JSON
    (read whole to say where), else ``problem`` on the line of ``at``."""
    load_json(read_text(path), path)
    return NBestFormatError(path, None if at is None else window.line_of(at), problem, window.text(at, 40))


class _Window:
    """The bytes of a file seen through a window that grows as they are read and lets go of what was decoded, with
    the line each byte is on."""

    def __init__(self, chunks: Iterator[bytes]):
        self.chunks, self.data = chunks, bytearray()
        self.line, self.counted = 1, 0  # byte `counted` of the window is on line `line`

    def more(self) -> bool:
        chunk = next(self.chunks, None)
        if chunk is not None:
            self.data += chunk
        return chunk is not None

    def skip(self, at: int) -> int | None:
        """The first byte at or after ``at`` that is no white space; None where the file ends first."""
        while (at := _SPACE.match(self.data, at).end()) == len(self.data):
            if not self.more():
                return None
        return at

    def end(self, at: int) -> int | None:
        """Where the item that starts at ``at`` ends: the comma or bracket after it, where msgspec, decoding from
        ``at`` on, finds the characters that trail the item; None where it is no JSON or the file ends first."""
        while True:
            with memoryview(self.data) as view:
                try:
                    _ANY(view[at:])
                    problem = "truncated"  # the window ends with the item: what follows it is still to come
                except UnicodeDecodeError as err:  # a character the window cuts, or one that is no UTF-8
                    problem = "truncated" if err.start >= len(view) - at - 4 else "not UTF-8"
                except DecodeError as err:
                    problem = str(err)
                    if "truncated" in problem and lone_surrogate(view[at:], cut=True):
                        problem = "a lone surrogate"  # which msgspec says as "truncated"
            if "trailing characters" in problem:
                end = at + (_offset(problem) or 0) - 1
                return end if at <= end < len(self.data) and self.data[end] in b",]" else None
            cut = "truncated" in problem or (_offset(problem) or 0) >= len(self.data) - at  # at the window's end
            if not cut or not self.more():
                return None

    def line_of(self, at: int) -> int:
        """The line of byte ``at`` (at or after any byte asked before)."""
        self.line += self.data.count(b"\n", self.counted, at)
        self.counted = at
        return self.line

    def drop(self, at: int) -> int:
        """``at`` once the bytes before it are let go of when they are many (where ``at`` now is in the window)."""
        if at < CHUNK:
            return at
        self.line_of(at)
        del self.data[:at]
        self.counted = 0
        return 0

    def text(self, at: int | None, size: int) -> str:
        """Up to ``size`` characters from byte ``at``."""
        if at is None:
            return ""
        while len(self.data) < at + 4 * size and self.more():
            pass
        return self.data[at : at + 4 * size].decode("utf-8", "replace")[:size]
