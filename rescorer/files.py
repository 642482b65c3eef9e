"""Atomic output: a file or directory is written beside its target under a staging name that names its owner,
then renamed into place, so a reader never sees half of it and a killed writer's leftovers are removed later; and
rescorer's own records (job state, checkpoints, stored scores) as strict JSON."""
from __future__ import annotations

import contextlib
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
from typing import Any, Iterable, Iterator, Mapping

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
# the longest name of a file written here: its staging name (.NAME.PID@HOST.RANDOM.tmp) still fits in a file name's
# 255 bytes with a host name of up to 47 characters
NAME_LENGTH = 185
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
def _staged(path: str | os.PathLike, make_dir: bool) -> Iterator[Path]:
    """Yield a staging file or directory beside ``path``; it replaces ``path`` (mode 0666 or 0777 & ~umask) only if
    the block succeeds."""
    path = Path(path)
    tmp = _staging(path, make_dir)
    try:
        yield tmp
        os.chmod(tmp, (0o777 if make_dir else 0o666) & ~current_umask())
        _OWN_STAGING.discard(tmp)  # an interrupt from here on leaves it for the next writer to remove
        if make_dir:
            _swap_dir(tmp, path)
        else:
            os.replace(tmp, path)
    finally:
        _OWN_STAGING.discard(tmp)
        if os.path.exists(tmp):
            if make_dir:
                shutil.rmtree(tmp)
            else:
                os.unlink(tmp)


def _swap_dir(tmp: Path, path: Path) -> None:
    """Put the finished directory ``tmp`` in the place of ``path`` (an old one is moved aside, then removed)."""
    if path.exists():
        old = path.with_name(f".{path.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        path.rename(old)
        tmp.rename(path)
        shutil.rmtree(old)
    else:
        tmp.rename(path)


def atomic_file(path: str | os.PathLike) -> contextlib.AbstractContextManager[Path]:
    """Yield a temporary path beside ``path``; it replaces ``path`` (mode 0666 & ~umask) only if the block succeeds."""
    return _staged(path, make_dir=False)


def atomic_dir(path: str | os.PathLike) -> contextlib.AbstractContextManager[Path]:
    """Yield a temporary directory beside ``path``; it replaces ``path`` (mode 0777 & ~umask) if the block succeeds."""
    return _staged(path, make_dir=True)


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically."""
    with atomic_file(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_lines(path: str | os.PathLike, lines: Iterable[str]) -> None:
    """Write ``lines`` (each with its newline) to ``path`` atomically, one at a time: a file of any size is written
    without a copy of it in memory."""
    with atomic_file(path) as tmp, tmp.open("w", encoding="utf-8") as out:
        out.writelines(lines)


def copy_file(source: str | os.PathLike, path: str | os.PathLike) -> None:
    """Copy ``source`` to ``path`` atomically."""
    with atomic_file(path) as tmp:
        shutil.copyfile(source, tmp)


def special_kind(mode: int) -> str | None:
    """What a file of ``mode`` is when it is not a regular file or a directory (``a pipe``, ``a socket``,
    ``a device``): such a file could be read only once or wait for a writer."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return "a pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"


FLOAT_TAG = "__float__"  # a number JSON cannot hold, in a record: {"__float__": "inf"} (no text can be read as it)


def record_text(value: Any, indent: int | None = None, **options: Any) -> str:
    """A record of rescorer's own (a job's state, a checkpoint, a stored score) as strict JSON text: a non-finite
    number is written as ``{"__float__": "inf"}`` (``"-inf"``, ``"nan"``), which :func:`record_value` reads back."""
    return json.dumps(_tagged(value), indent=indent, allow_nan=False, **options)


def record_value(text: str | bytes) -> Any:
    """The value of a record written by :func:`record_text` (a bare ``-Infinity`` from older files is taken too)."""
    return json.loads(text, object_hook=_untagged)


def _tagged(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return {FLOAT_TAG: repr(value)}
    if isinstance(value, Mapping):
        return {key: _tagged(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_tagged(item) for item in value]
    return value


def _untagged(obj: dict) -> Any:
    return float(obj[FLOAT_TAG]) if len(obj) == 1 and FLOAT_TAG in obj else obj
