"""Persistent score store: SQLite, keyed by (scorer signature, scored text); resumable and safe to read concurrently."""
from __future__ import annotations

import contextlib
import math
import os
import sqlite3
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

from .errors import StoreError
from .files import record_text, record_value, special_kind

SCHEMA = """
CREATE TABLE IF NOT EXISTS scores (
    signature TEXT NOT NULL,
    text      TEXT NOT NULL,
    total     REAL NOT NULL,
    tokens    TEXT NOT NULL,   -- JSON list of per-token log-probs, in order
    PRIMARY KEY (signature, text)
) WITHOUT ROWID;
"""


def valid_row(total: object, tokens: object) -> tuple[float, list[float]] | None:
    """A stored row as the tool writes it, or None: a number total that is not NaN or +inf, and a JSON list of
    numbers that are not either (−inf is a score: an impossible token), −inf in the total exactly when a token
    holds it (or none was scored)."""
    try:
        scores = record_value(tokens)  # type: ignore[arg-type]
        summed = math.fsum(scores) if isinstance(scores, list) else math.nan
    except (TypeError, ValueError, OverflowError):  # not JSON, not numbers, or +inf with −inf
        return None
    if isinstance(total, bool) or not isinstance(total, (int, float)):
        return None
    if math.isnan(total) or math.isnan(summed) or math.inf in (total, summed):
        return None
    if math.isinf(summed) != (math.isinf(total) and bool(scores)):  # an empty list may go with any total
        return None
    return float(total), scores


def read_only(path: Path) -> sqlite3.Connection:
    """A connection that never writes: with the store's write-ahead log where SQLite can read it, else the main file
    alone as it is (immutable)."""
    uri = path.resolve().as_uri()
    try:
        db = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None)
        db.execute("SELECT COUNT(*) FROM scores").fetchone()
        return db
    except sqlite3.Error:
        return sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, isolation_level=None)


class ScoreStore:
    """``{(signature, text): (total, per-token scores)}`` on disk; one writer, any number of readers (WAL)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        kind = special_kind(self.path.stat().st_mode) if self.path.exists() else None
        if kind or self.path.is_dir():
            raise StoreError(f"{self.path}: not a score store but {kind or 'a directory'}: point engine.store at a "
                             "file (a new one is made)")
        self.read_only = self.path.is_file() and not os.access(self.path.parent, os.W_OK)
        with self.errors("open"):
            if self.read_only:  # a store on read-only media (or in a folder we may not write): read it as it is
                self.db = read_only(self.path)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
                self.db.executescript(SCHEMA)
            problems = [row[0] for row in self.db.execute("PRAGMA quick_check")]
        if problems != ["ok"]:
            self.db.close()
            raise StoreError(f"{self.path}: the score store is damaged ({problems[0]}); move it aside and run again "
                             "(its scores are then recomputed)")

    @contextlib.contextmanager
    def errors(self, doing: str) -> Iterator[None]:
        """SQLite and file-system errors as one line naming the store and what failed."""
        try:
            yield
        except (sqlite3.Error, OSError) as err:
            advice = ("; it is not a score store (an SQLite file): if it is one of your files, point engine.store at "
                      "a new file; if it is a damaged store, move it aside (its scores are then recomputed)") if (
                isinstance(err, sqlite3.DatabaseError) and not isinstance(err, sqlite3.OperationalError)) else ""
            raise StoreError(f"{self.path}: cannot {doing} the score store ({err}){advice}") from None

    def get(self, signature: str, texts: Iterable[str]) -> dict[str, tuple[float, list[float]]]:
        """Stored scores of those ``texts`` that have one."""
        out: dict[str, tuple[float, list[float]]] = {}
        texts = list(dict.fromkeys(texts))
        with self.errors("read"):
            self._get(signature, texts, out)
        return out

    def _get(self, signature: str, texts: list[str], out: dict[str, tuple[float, list[float]]]) -> None:
        for start in range(0, len(texts), 500):
            chunk = texts[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self.db.execute(
                f"SELECT text, total, tokens FROM scores WHERE signature = ? AND text IN ({marks})", [signature, *chunk])
            for text, total, tokens in rows:
                row = valid_row(total, tokens)
                if row is not None:  # a row the tool never wrote is left out: it is computed again and replaced
                    out[text] = row

    def put(self, signature: str, scores: Mapping[str, tuple[float, Sequence[float]]]) -> None:
        """Store finished sentences in one transaction (all or nothing)."""
        if not scores:
            return
        if self.read_only:
            raise StoreError(f"{self.path}: the score store is read-only and lacks {len(scores):,} of the scores this "
                             "run needs: point engine.store at a file that can be written")
        with self.errors("write to"), self.db:
            self.db.execute("BEGIN")
            self.db.executemany(
                "INSERT OR REPLACE INTO scores VALUES (?, ?, ?, ?)",
                [(signature, text, float(total), record_text([float(t) for t in tokens]))
                 for text, (total, tokens) in scores.items()])

    def count(self, signature: str | None = None) -> int:
        if signature is None:
            return self.db.execute("SELECT COUNT(*) FROM scores").fetchone()[0]
        return self.db.execute("SELECT COUNT(*) FROM scores WHERE signature = ?", [signature]).fetchone()[0]

    def signatures(self) -> list[str]:
        return [row[0] for row in self.db.execute("SELECT DISTINCT signature FROM scores")]

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "ScoreStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
