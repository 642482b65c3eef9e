"""Whole-file content hashes (BLAKE2b): a model's files cached by each file's stamp so that a second look is free,
and read afresh for a model being loaded; an input's file or directory never cached, read whole each time
(:func:`content_digest`).

A stamp is the file's device, inode, size and the times of its last content and status change. The status change
time (ctime) is set by the kernel on every write and every ``os.utime``, so a file rewritten with its old size and
mtime put back gets a new stamp. The cache is one small JSON file under the user cache dir (``$RESCORER_CACHE``,
else ~/.cache/rescorer), rewritten atomically; a missing, corrupt or unwritable cache only costs a re-hash.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path
from typing import Iterator

from .errors import NBestFormatError, ScorerError
from .files import record_text, record_value, write_text
from .paths import cache_dir

CHUNK = 16 << 20  # bytes read at a time
CACHE_NAME = "file-hashes.json"


def _hash_file(path: Path, size: int = 64) -> str:
    """BLAKE2b (``size`` bytes) of the whole content, streamed."""
    digest = hashlib.blake2b(digest_size=size)
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def stamp(path: Path) -> list[int]:
    """What tells that a file is the one hashed before: device, inode, size, mtime and ctime (in ns)."""
    info = path.stat()
    return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def _cache_path() -> Path:
    return cache_dir() / CACHE_NAME


def _load(cache: Path) -> dict:
    try:
        data = record_value(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save(cache: Path, entries: dict) -> None:
    live = {k: v for k, v in entries.items() if os.path.exists(k)}  # forget deleted files
    try:
        write_text(cache, record_text(live, indent=0, sort_keys=True) + "\n")
    except OSError:
        pass


def _digests(files: list[Path], fresh: bool) -> tuple[list[str], list[list[int]]]:
    """Each file's content hash and its stamp when it was read (``fresh``: every file read now, the cache only
    written), the cache kept up to date."""
    cache = _cache_path()
    entries = _load(cache)
    out, stamps, changed = [], [], False
    for file in files:
        resolved = file.resolve()
        key, now = str(resolved), stamp(resolved)
        entry = entries.get(key)
        known = isinstance(entry, dict) and entry.get("stamp") == now and isinstance(entry.get("blake2b"), str)
        if fresh or not known:
            entry = entries[key] = {"stamp": now, "blake2b": _hash_file(resolved)}
            changed = True
        out.append(entry["blake2b"])
        stamps.append(now)
    if changed:
        _save(cache, entries)
    return out, stamps


def file_digests(files: list[Path]) -> list[str]:
    """The content hash of each file, from the cache where its stamp is unchanged."""
    return _digests(files, fresh=False)[0]


@contextlib.contextmanager
def read_unchanged(files: list[Path], what: str) -> Iterator[list[str]]:
    """Yield the content hash of each file, read now (never from the cache), for a block that loads them: a file
    changed before the block is over (its stamp moved) is a one-line ``ScorerError`` naming ``what`` and the file,
    so the hashes are those of the bytes the block read."""
    digests, stamps = _digests(files, fresh=True)
    yield digests
    for file, before in zip(files, stamps):
        try:
            after = stamp(file.resolve())
        except OSError:
            after = None
        if after != before:
            raise ScorerError(f"{what}: {file} changed while it was being loaded; run again once it is written")


def content_digest(path: Path) -> str:
    """What identifies an input's content: the BLAKE2b of a file's bytes, or of every file under a directory by its
    relative name and bytes, in name order. Never cached, so a file rewritten with its size and time kept is told
    apart: one streaming read of the whole input each call, about 2 ms a MB (BLAKE2b's 470 MB/s on one core of the
    2-core test machine; reading from the OS cache adds little)."""
    try:
        if not path.is_dir():
            return _hash_file(path, 16)
        files = sorted((p.relative_to(path).as_posix(), p) for p in path.rglob("*") if p.is_file())
        digest = hashlib.blake2b(digest_size=16)
        for name, file in files:  # no name holds a NUL and every file's digest is as long: the sequence is unambiguous
            digest.update(f"{name}\0{_hash_file(file, 16)}".encode("utf-8", "surrogateescape"))
        return digest.hexdigest()
    except OSError as err:
        raise NBestFormatError(err.filename or path, None, f"cannot read it ({err.strerror or err})") from None
