"""Shared pieces of every reader and writer: strict decoding, score parsing, ids, line checks."""
from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import stat
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Iterator

from ..errors import NBestFormatError
from ..files import atomic_file, special_kind
from ..types import NBest, Utterance

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


def _regular_file(path: Path, most: int | None = None) -> Path:
    """``path`` itself when it is a regular file (of at most ``most`` bytes, where given); else an error saying what
    it is. Only regular files are opened: a pipe or device could not be read a second time (or would wait for a
    writer)."""
    status = input_status(path)
    if status is None:
        raise NBestFormatError(path, None, "no such file")
    if stat.S_ISDIR(status.st_mode):
        raise NBestFormatError(path, None, "expected a file, found a directory")
    if not stat.S_ISREG(status.st_mode):
        kind = special_kind(status.st_mode)
        raise NBestFormatError(path, None, f"not a regular file but {kind}, which could be read only once or wait "
                                           "for a writer: save it to a file first")
    if most is not None and status.st_size > most:
        raise NBestFormatError(path, None, f"{status.st_size:,} bytes, more than the {most:,} it may hold")
    return path


def _decoded(data: bytes, path: Path, first_line: int) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = first_line + data.count(b"\n", 0, err.start)
        raise NBestFormatError(path, line, "not valid UTF-8", data[err.start : err.start + 8]) from None


def read_text(path: str | os.PathLike, most: int | None = None) -> str:
    """The whole file as UTF-8; undecodable bytes and empty files are errors naming the line (regular files only,
    of at most ``most`` bytes where given)."""
    path = _regular_file(Path(path), most)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise NBestFormatError(path, None, f"cannot read it ({err.strerror or err})") from None
    text = _decoded(data, path, 1).removeprefix("\ufeff")
    if not text.strip():
        raise NBestFormatError(path, None, "file is empty")
    return text


@contextlib.contextmanager
def reading(path: Path) -> Iterator[BinaryIO]:
    """The regular file ``path`` open for reading; a failure to read it is an error naming it."""
    path = _regular_file(path)
    try:
        with path.open("rb") as handle:
            yield handle
    except OSError as err:
        raise NBestFormatError(path, None, f"cannot read it ({err.strerror or err})") from None


def decode_line(data: bytes, path: Path, number: int) -> str:
    """Line ``number`` of ``path`` from its bytes ``data``: UTF-8 (else an error naming the line), without its line
    end, nor a byte-order mark on line 1."""
    line = _decoded(data, path, number)
    return (line.removeprefix("\ufeff") if number == 1 else line).removesuffix("\n").removesuffix("\r")


def offset_lines(path: str | os.PathLike) -> Iterator[tuple[int, int, str]]:
    """(number, byte offset, line) of the file, one line at a time, as :func:`read_lines` reads them (the same
    checks and errors): a list of any size is read in the memory of one line."""
    path = Path(path)
    found, offset = False, 0
    with reading(path) as handle:
        for number, data in enumerate(handle, 1):
            line = decode_line(data, path, number)
            found = found or bool(line.strip())
            yield number, offset, line
            offset += len(data)
    if not found:
        raise NBestFormatError(path, None, "file is empty")


def iter_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """(number, line) of the file, one line at a time, as :func:`read_lines` reads them (the same checks and
    errors): a list of any size is read in the memory of one line."""
    for number, _, line in offset_lines(path):
        yield number, line


def lines_between(handle: BinaryIO, path: Path, start: int, end: int | None, number: int) -> Iterator[tuple[int, str]]:
    """(number, line) of an open file's lines from byte ``start`` (line ``number``, as :func:`offset_lines` gave it)
    up to byte ``end`` (None: the end of the file)."""
    handle.seek(start)
    while end is None or start < end:
        data = handle.readline()
        if not data:
            return
        yield number, decode_line(data, path, number)
        start, number = start + len(data), number + 1


def head_line(path: str | os.PathLike) -> tuple[str, str]:
    """The file's first line and its first line that is not blank, read no further (a file of blank lines is an
    error, as :func:`read_text` says it)."""
    lines = iter_lines(path)
    try:
        first = next(lines)[1]
        return first, first if first.strip() else next(line for _, line in lines if line.strip())
    finally:
        lines.close()


def binary_blocks(path: str | os.PathLike, size: int) -> Iterator[list[bytes]]:
    """The file's lines as bytes (each with its newline; a byte-order mark dropped), about ``size`` bytes of whole
    lines at a time (regular files only; a line longer than that is a block of its own)."""
    with reading(Path(path)) as handle:
        for k, lines in enumerate(iter(lambda: handle.readlines(size), [])):
            if k == 0 and lines[0].startswith(b"\xef\xbb\xbf"):
                lines[0] = lines[0][3:]
            yield lines


def binary_chunks(path: str | os.PathLike, size: int) -> Iterator[bytes]:
    """The file's bytes, ``size`` at a time, whatever its lines (a byte-order mark dropped; regular files only)."""
    with reading(Path(path)) as handle:
        first = handle.read(max(size, 3))
        if first:
            yield first[3:] if first.startswith(b"\xef\xbb\xbf") else first
        yield from iter(lambda: handle.read(size), b"")


def csv_lines(path: str | os.PathLike) -> Iterator[str]:
    """The file's lines as the csv module reads them: text split at "\\n", "\\r\\n" and "\\r", each with its line end
    (a byte-order mark dropped; regular files only); undecodable bytes are an error naming the line, as
    :func:`read_text` names it."""
    path = _regular_file(Path(path))
    try:
        with path.open("r", encoding="utf-8-sig", newline="") as handle:
            yield from handle
    except UnicodeDecodeError:
        read_text(path)
        raise NBestFormatError(path, None, "not valid UTF-8") from None
    except OSError as err:
        raise NBestFormatError(path, None, f"cannot read it ({err.strerror or err})") from None


class KeyedLines:
    """An ``id value`` file (ESPnet, Kaldi) read one line at a time, to be read in step with the files beside it: the
    line in hand (``key`` and ``value``, None and "" past the last line; ``line``, ``number``) and the key before it.
    A blank line is an error (a file of nothing else, an empty file)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lines = iter_lines(path)
        self.key: str | None = None
        self.before: str | None = None
        self.value = self.line = ""
        self.number = 0
        self.advance()

    def advance(self) -> None:
        """Go to the next line."""
        self.before = self.key
        number, line = next(self._lines, (self.number, None))
        if line is None:
            self.key, self.value, self.line = None, "", ""
            return
        if not line.strip():
            any(rest.strip() for _, rest in self._lines)  # past a file of blank lines, iter_lines says it is empty
            raise NBestFormatError(self.path, number, "blank line")
        self.number, self.line = number, line
        self.key, self.value = split_key(line)

    def close(self) -> None:
        self._lines.close()

    def __enter__(self) -> "KeyedLines":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


UTTERANCES = 1000  # utterances in a block when a reader is asked for no size


def blocks_of(utterances: Iterable[Utterance], size: int, nbest: Callable[[list[Utterance]], NBest]) -> Iterator[NBest]:
    """``utterances`` in blocks of ``size`` (0: :data:`UTTERANCES`; the last may be smaller), each made a list by
    ``nbest`` once it is full; at least one block (an empty one where there is no utterance)."""
    held: list[Utterance] = []
    made = False
    for utt in utterances:
        held.append(utt)
        if len(held) == (size or UTTERANCES):
            yield nbest(held)
            held, made = [], True
    if held or not made:
        yield nbest(held)


def split_lines(text: str) -> list[str]:
    """Lines split on "\\n" only (not on U+2028 and friends), "\\r\\n" tolerated, no empty last line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def read_lines(path: str | os.PathLike) -> list[str]:
    """The file's lines without their newlines (a final newline adds no empty line)."""
    return split_lines(read_text(path))


def find_key(text: str, key: str, start: int = 0, last: bool = False) -> tuple[int | None, int]:
    """(1-based line, offset) of the JSON string ``key`` at or after ``start`` (the last one if ``last``)."""
    for needle in (json.dumps(key, ensure_ascii=False, allow_nan=False), json.dumps(key, allow_nan=False)):
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


def text_lines(lines: Iterable[str], path: str | os.PathLike, first: int = 1) -> str:
    """The body of a line-based file: every line checked by :func:`check_line_text`, each ended by "\\n" (``first``:
    the line number of the first)."""
    return "".join(f"{check_line_text(line, path, number)}\n" for number, line in enumerate(lines, first))


def id_lines(rows: Iterable[tuple[str, str]], path: str | os.PathLike, first: int = 1) -> str:
    """The body of an ``id text`` file (Kaldi/ESPnet ``text``, ``score``, a 1-best): every id and text checked
    (``first``: the line number of the first)."""
    return "".join(f"{check_line_id(key, path)} {check_line_text(value, path, number)}\n"
                   for number, (key, value) in enumerate(rows, first))


@contextlib.contextmanager
def line_writer(path: str | os.PathLike, lines_of: Callable[[NBest], Iterable[str]]
                ) -> Iterator[Callable[[NBest], None]]:
    """A function that writes a line-based file block by block: the lines ``lines_of`` gives for each block, each
    checked by :func:`check_line_text` (numbered through the file) and ended by "\\n"; the file in place when the
    context ends, nothing left if it fails."""
    number = 1
    with atomic_file(path) as tmp, tmp.open("w", encoding="utf-8") as out:
        def write(block: NBest) -> None:
            nonlocal number
            for start in range(0, len(block), UTTERANCES):  # the text of a few utterances at a time
                lines = list(lines_of(block.with_utterances(block.utterances[start : start + UTTERANCES])))
                out.write(text_lines(lines, path, number))
                number += len(lines)
        yield write


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
