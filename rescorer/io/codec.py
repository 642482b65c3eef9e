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
from typing import Any, Callable, Iterable, Mapping

import msgspec

from ..errors import NBestFormatError

DecodeError = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)  # what bad JSON raises (and is said as)
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


def json_error(err: BaseException, text: str | bytes, path: str | os.PathLike, line: int | None) -> NBestFormatError:
    """The one-line error for JSON ``text`` that did not decode (``line``: its line in ``path``, else found from
    where the error is)."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as bad:
        return NBestFormatError(path, _line(data, bad.start, line), "not valid UTF-8",
                                data[bad.start : bad.start + 8])
    message = str(err)
    if isinstance(err, RecursionError):
        problem, at = "invalid JSON (nested too deep)", None
    else:
        problem = f"invalid JSON ({message.removeprefix('JSON is malformed: ')})"
        at = len(data.rstrip()) if "truncated" in message else _offset(message)
        if b"Infinity" in data or b"NaN" in data:
            problem += "; NaN and Infinity are not JSON: write such a score as a string, e.g. \"-inf\""
    number = _line(data, at, line)
    rows = data.split(b"\n")
    shown = data if line is not None else rows[min(number or 1, len(rows)) - 1]
    return NBestFormatError(path, number, problem, shown.decode("utf-8").rstrip("\r\n"))


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

