"""Whole-file content hashes (BLAKE2b), cached by (resolved path, size, mtime_ns) so a second look is free.

The cache is one small JSON file under the user cache dir (``$RESCORER_CACHE``, else ~/.cache/rescorer),
rewritten atomically; a missing, corrupt or unwritable cache only costs a re-hash. A file rewritten in
place with the same size within the file system's mtime resolution would keep its entry: every common
Linux file system records nanoseconds.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from .files import record_text, record_value, write_text
from .paths import cache_dir

CHUNK = 16 << 20  # bytes read at a time
CACHE_NAME = "file-hashes.json"


def _hash_file(path: Path) -> str:
    """BLAKE2b of the whole content, streamed."""
    digest = hashlib.blake2b()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


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


def file_digests(files: list[Path]) -> list[str]:
    """The content hash of each file, from the cache where its (path, size, mtime_ns) is unchanged."""
    cache = _cache_path()
    entries = _load(cache)
    out, changed = [], False
    for file in files:
        resolved = file.resolve()
        stat = resolved.stat()
        key, stamp = str(resolved), [stat.st_size, stat.st_mtime_ns]
        entry = entries.get(key)
        if not (isinstance(entry, dict) and entry.get("stamp") == stamp and isinstance(entry.get("blake2b"), str)):
            entry = entries[key] = {"stamp": stamp, "blake2b": _hash_file(resolved)}
            changed = True
        out.append(entry["blake2b"])
    if changed:
        _save(cache, entries)
    return out
