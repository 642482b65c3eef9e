"""Shared pieces of every reader and writer: strict decoding, score parsing, ids, atomic output."""
from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import shutil
import socket
import stat
import tempfile
import threading
from pathlib import Path
from typing import Iterable, Iterator

from ..errors import NBestFormatError

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


def read_text(path: str | os.PathLike) -> str:
    """The whole file as UTF-8; undecodable bytes and empty files are errors naming the line. Only regular files are
    opened: a pipe or device could not be read a second time (or would wait for a writer)."""
    path = Path(path)
    status = input_status(path)
    if status is None:
        raise NBestFormatError(path, None, "no such file")
    if stat.S_ISDIR(status.st_mode):
        raise NBestFormatError(path, None, "expected a file, found a directory")
    if not stat.S_ISREG(status.st_mode):
        kind = "a pipe" if stat.S_ISFIFO(status.st_mode) else "a socket" if stat.S_ISSOCK(status.st_mode) else "a device"
        raise NBestFormatError(path, None, f"not a regular file but {kind}, which could be read only once or wait "
                                           "for a writer: save it to a file first")
    try:
        data = path.read_bytes()
    except OSError as err:
        raise NBestFormatError(path, None, f"cannot read it ({err.strerror or err})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise NBestFormatError(path, line, "not valid UTF-8", data[err.start : err.start + 8]) from None
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise NBestFormatError(path, None, "file is empty")
    return text


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
    seen: dict = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateKey(key)
        seen[key] = value
    return seen


def load_json(text: str, path: str | os.PathLike, line: int | None = None) -> object:
    """``json.loads`` that rejects duplicate keys; errors name the file, line and text of that line."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as err:
        rows = split_lines(text) or [""]
        number = min(err.lineno, len(rows))
        raise NBestFormatError(path, line or number, f"invalid JSON ({err.msg})", rows[number - 1]) from None
    except _DuplicateKey as err:
        where = line or find_key(text, err.key, last=True)[0]
        raise NBestFormatError(path, where, "duplicate JSON key", err.key) from None


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


_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process umask, read without changing it where Linux allows (``/proc/self/status``)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:  # elsewhere: set and restore at once (safe among this module's own callers)
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


# Staging paths of this process (removed by ``remove_own_staging`` when it is interrupted) and the host part of
# staging names: a staging path names its owner (``.NAME.PID@HOST.RANDOM.tmp``) so that a later writer of the same
# path can tell a dead owner's leftovers from a live writer's work.
_OWN_STAGING: set[Path] = set()
_HOST = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname()) or "host"


def staging_prefix(path: str | os.PathLike, pid: int | None = None) -> str:
    """The start of the name of a staging file or directory for ``path`` owned by process ``pid`` (default: this one)."""
    return f".{Path(path).name}.{os.getpid() if pid is None else pid}@{_HOST}."


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (on this host)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def remove_stale_staging(path: str | os.PathLike) -> None:
    """Remove the staging files and directories beside ``path`` left by writers of it on this host that died
    (killed before they could clean up); a live writer's staging is left alone."""
    path = Path(path)
    owned = re.compile(rf"\.{re.escape(path.name)}\.(\d+)@{re.escape(_HOST)}\.[a-z0-9_]+\.tmp")
    try:
        siblings = list(path.parent.iterdir())
    except OSError:
        return
    for sibling in siblings:
        match = owned.fullmatch(sibling.name)
        if match and int(match.group(1)) != os.getpid() and not pid_alive(int(match.group(1))):
            _remove(sibling)


def remove_own_staging() -> None:
    """Remove this process's staging files and directories (an interrupted run leaves none behind)."""
    for path in list(_OWN_STAGING):
        _remove(path)
    _OWN_STAGING.clear()


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()


def _staging(path: Path, make_dir: bool) -> Path:
    """A new staging file or directory beside ``path``, named after its owner, after removing dead owners' ones."""
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(path)
    options = {"prefix": staging_prefix(path), "suffix": ".tmp", "dir": path.parent}
    if make_dir:
        tmp = Path(tempfile.mkdtemp(**options))
    else:
        fd, name = tempfile.mkstemp(**options)
        os.close(fd)
        tmp = Path(name)
    _OWN_STAGING.add(tmp)
    return tmp


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; it replaces ``path`` (mode 0666 & ~umask) only if the block succeeds."""
    path = Path(path)
    tmp = _staging(path, make_dir=False)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~current_umask())
        _OWN_STAGING.discard(tmp)  # an interrupt from here on leaves it for the next writer to remove
        os.replace(tmp, path)
    finally:
        _OWN_STAGING.discard(tmp)
        if os.path.exists(tmp):
            os.unlink(tmp)


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary directory beside ``path``; it replaces ``path`` (mode 0777 & ~umask) if the block succeeds."""
    path = Path(path)
    tmp = _staging(path, make_dir=True)
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~current_umask())
        _OWN_STAGING.discard(tmp)  # an interrupt during the swap leaves it for the next writer to remove
        if path.exists():
            old = path.with_name(f".{path.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            path.rename(old)
            tmp.rename(path)
            shutil.rmtree(old)
        else:
            tmp.rename(path)
    finally:
        _OWN_STAGING.discard(tmp)
        if tmp.exists():
            shutil.rmtree(tmp)


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically."""
    with atomic_file(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


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
