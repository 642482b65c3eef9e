"""Shared pieces of every reader and writer: strict decoding, score parsing, ids, line checks."""
from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from pathlib import Path
from typing import Callable, Iterable, Iterator

from ..errors import NBestFormatError
from ..files import special_kind

_FLOAT = r"([-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|inf(?:inity)?|nan))"
_NUMBER = re.compile(rf"\s*(?:tensor\(\s*{_FLOAT}\s*(?:,[^)]*)?\)|{_FLOAT})\s*$", re.IGNORECASE)


def input_status(path: str | os.PathLike) -> os.stat_result | None:
    """What an input path is (links followed), found without opening it; None when nothing is there. A symlink loop,
    a link to nothing or a path that cannot be looked at is an error naming it."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise NBestFormatError(path, None, "symbolic link to nothing", os.readlink(path)) from None
        return None
    except OSError as err:
        problem = "symbolic link loop" if err.errno == errno.ELOOP else f"cannot look at it ({err.strerror or err})"
        raise NBestFormatError(path, None, problem) from None


def present(path: str | os.PathLike) -> bool:
    """Whether an optional input file is there (a symlink loop is an error, not an absent file)."""
    return input_status(path) is not None


def _regular_file(path: Path) -> Path:
    """``path`` itself when it is a regular file; else an error saying what it is. Only regular files are opened: a
    pipe or device could not be read a second time (or would wait for a writer)."""
    status = input_status(path)
    if status is None:
        raise NBestFormatError(path, None, "no such file")
    if stat.S_ISDIR(status.st_mode):
        raise NBestFormatError(path, None, "expected a file, found a directory")
    if not stat.S_ISREG(status.st_mode):
        kind = special_kind(status.st_mode)
        raise NBestFormatError(path, None, f"not a regular file but {kind}, which could be read only once or wait "
                                           "for a writer: save it to a file first")
    return path


def _decoded(data: bytes, path: Path, first_line: int) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = first_line + data.count(b"\n", 0, err.start)
        raise NBestFormatError(path, line, "not valid UTF-8", data[err.start : err.start + 8]) from None


def read_text(path: str | os.PathLike) -> str:
    """The whole file as UTF-8; undecodable bytes and empty files are errors naming the line (regular files only)."""
    path = _regular_file(Path(path))
    try:
        data = path.read_bytes()
    except OSError as err:
        raise NBestFormatError(path, None, f"cannot read it ({err.strerror or err})") from None
    text = _decoded(data, path, 1).removeprefix("\ufeff")
    if not text.strip():
        raise NBestFormatError(path, None, "file is empty")
    return text


def iter_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """(number, line) of the file, one line at a time, as :func:`read_lines` reads them (the same checks and
    errors): a list of any size is read in the memory of one line."""
    path = _regular_file(Path(path))
    found = False
    try:
        with path.open("rb") as handle:
            for number, data in enumerate(handle, 1):
                line = _decoded(data, path, number)
                line = (line.removeprefix("\ufeff") if number == 1 else line).removesuffix("\n").removesuffix("\r")
                found = found or bool(line.strip())
                yield number, line
    except OSError as err:
        raise NBestFormatError(path, None, f"cannot read it ({err.strerror or err})") from None
    if not found:
        raise NBestFormatError(path, None, "file is empty")


LINE_BREAKERS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"})


def _encoder() -> Callable[[object], str]:
    """JSON of a value (UTF-8 kept; a record is a tree: no cycle to look for), by the C encoder made once where
    Python has it (``json.dumps`` makes one per value), else by ``json``'s own."""
    encoder = json.JSONEncoder(ensure_ascii=False, check_circular=False)
    if c_make_encoder is None:
        return encoder.encode
    encode = c_make_encoder(None, encoder.default, encode_basestring, None, ": ", ", ", False, False, True)
    return lambda value: "".join(encode(value, 0))


_ENCODE = _encoder()


def json_line(value: object) -> str:
    """``value`` as one line of JSON (UTF-8 kept), with the characters other tools take for line breaks (U+2028,
    U+2029, U+0085; JSON escapes the rest) escaped, so that any JSONL reader finds one record per line."""
    line = _ENCODE(value)
    return line if line.isascii() else line.translate(LINE_BREAKERS)


def split_lines(text: str) -> list[str]:
    """Lines split on "\\n" only (not on U+2028 and friends), "\\r\\n" tolerated, no empty last line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def read_lines(path: str | os.PathLike) -> list[str]:
    """The file's lines without their newlines (a final newline adds no empty line)."""
    return split_lines(read_text(path))


class _DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict:
    found = dict(pairs)
    if len(found) < len(pairs):  # rare: find the first key seen twice
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return found


_STRICT = json.JSONDecoder(object_pairs_hook=_no_duplicates).decode  # a key seen twice: _DuplicateKey
_PLAIN = json.JSONDecoder().decode


def load_json(text: str, path: str | os.PathLike, line: int | None = None, strict: bool = True) -> object:
    """``json.loads`` that rejects duplicate keys (``strict=False``: the caller checks them, see
    :func:`check_keys`); errors name the file, line and text of that line."""
    try:
        return (_STRICT if strict else _PLAIN)(text)
    except json.JSONDecodeError as err:
        rows = split_lines(text) or [""]
        number = min(err.lineno, len(rows))
        raise NBestFormatError(path, line or number, f"invalid JSON ({err.msg})", rows[number - 1]) from None
    except _DuplicateKey as err:
        where = line or find_key(text, err.key, last=True)[0]
        raise NBestFormatError(path, where, "duplicate JSON key", err.key) from None


def check_keys(text: str, keys: int, path: str | os.PathLike, line: int | None = None) -> None:
    """Refuse a key given twice in an object of the JSON ``text``, whose decoded objects hold ``keys`` keys in all:
    every key has its colon, so a line with as many colons as keys has none twice (and none in a string); with
    more, the strict decoder decides."""
    if text.count(":") != keys:
        load_json(text, path, line)


def find_key(text: str, key: str, start: int = 0, last: bool = False) -> tuple[int | None, int]:
    """(1-based line, offset) of the JSON string ``key`` at or after ``start`` (the last one if ``last``)."""
    for needle in (json.dumps(key, ensure_ascii=False), json.dumps(key)):
        at = text.rfind(needle, start) if last else text.find(needle, start)
        if at >= 0:
            return text.count("\n", 0, at) + 1, at
    return None, start


def parse_score(value: str, path: str | os.PathLike, line: int | None, column: str = "score") -> float:
    """A finite float (or -inf, also spelt ``-Infinity``) from ``value``; accepts torch's ``tensor(x, ...)`` repr."""
    match = _NUMBER.match(value)
    if not match:
        raise NBestFormatError(path, line, f"{column} is not a number", value)
    number = float(match.group(1) or match.group(2))
    if math.isnan(number) or number == math.inf:
        raise NBestFormatError(path, line, f"{column} is {number}", value)
    return number


def is_number_text(value: str) -> bool:
    """Whether :func:`parse_score` reads ``value`` as a number (NaN and +inf included, which it then refuses)."""
    return bool(_NUMBER.match(value))


def format_number(value: float) -> str:
    """Shortest text that reads back to exactly ``value``."""
    return repr(float(value))


def json_score(text: str) -> int | float | str:
    """A score as a JSON value: a number where JSON has one (``-5`` stays an integer), else the text (``-inf``)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return text
    return number if math.isfinite(number) else text


def split_key(line: str) -> tuple[str, str]:
    """``key<space or tab>value`` → (key, value), as Kaldi and ESPnet read it (``line.split(maxsplit=1)``)."""
    parts = line.split(maxsplit=1)
    return (parts[0], parts[1] if len(parts) > 1 else "") if parts else ("", "")


def line_id_problem(utt_id: str, what: str = "utterance id") -> str | None:
    """Why an ``id text`` line cannot hold ``utt_id`` (it is empty or holds whitespace); None when it can."""
    if utt_id and not any(c.isspace() for c in utt_id):
        return None
    return f"{what} {'is empty' if not utt_id else 'contains whitespace'}, so an 'id text' line cannot hold it"


def check_line_id(utt_id: str, path: str | os.PathLike, what: str = "utterance id") -> str:
    """``utt_id`` if an ``id text`` line can hold it (not empty, no whitespace at all), else a one-line error."""
    problem = line_id_problem(utt_id, what)
    if problem:
        raise NBestFormatError(path, None, problem, utt_id)
    return utt_id


def read_at(origin: str) -> tuple[str, int | None]:
    """The file and line of an utterance's ``origin`` (``file:line``); ``("", None)`` when it has none."""
    where, _, line = origin.rpartition(":")
    return where, int(line) if line.isdigit() else None


LINE_BREAKS = "\n\r"  # what no line of a line-based file can hold: readers split on "\n" and drop a final "\r"


def check_line_text(text: str, path: str | os.PathLike, line: int | None = None) -> str:
    """``text`` if one line can hold it (no "\\n" or "\\r" in it), else a one-line error naming the line."""
    if any(c in text for c in LINE_BREAKS):
        raise NBestFormatError(path, line, "text holds a line break, which one line of this file cannot hold", text)
    return text


def text_lines(lines: Iterable[str], path: str | os.PathLike) -> str:
    """The body of a line-based file: every line checked by :func:`check_line_text`, each ended by "\\n"."""
    return "".join(f"{check_line_text(line, path, number)}\n" for number, line in enumerate(lines, 1))


def id_lines(rows: Iterable[tuple[str, str]], path: str | os.PathLike) -> str:
    """The body of an ``id text`` file (Kaldi/ESPnet ``text``, ``score``, a 1-best): every id and text checked."""
    return "".join(f"{check_line_id(key, path)} {check_line_text(value, path, number)}\n"
                   for number, (key, value) in enumerate(rows, 1))


def require_ranks(ranks: list[int], path: str | os.PathLike, line: int | None, utt_id: str) -> None:
    """Ranks of one utterance must be 1..n, each once."""
    seen: set[int] = set()
    for rank in ranks:
        if rank in seen:
            raise NBestFormatError(path, line, f"duplicate rank {rank} for utterance", utt_id)
        seen.add(rank)
    missing = sorted(set(range(1, len(ranks) + 1)) - seen)
    if missing:
        raise NBestFormatError(path, line, f"missing rank {missing[0]} for utterance", utt_id)
