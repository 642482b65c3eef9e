"""Rows as flat arrays: every row of every prepared sentence, built once; a batch is an array of row indices.

A scorer's ``pool(sentences)`` concatenates what its rows need into flat NumPy arrays (token ids, spans, …)
with one entry per row; its ``forward(pool, picked)`` gathers a batch from them with a few vectorised NumPy
operations and returns ``out[B, W]`` whose row ``b`` holds the ``count[picked[b]]`` scores of that row,
left-aligned. The engine sorts the rows by length, cuts batches and scatters each batch's scores into one
flat array of per-target values; no Python runs per row.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np


@dataclass(frozen=True)
class RowPool:
    """The rows of some sentences (row-major: a sentence's rows together, in order)."""

    sentence: np.ndarray  # [R] the sentence each row belongs to
    length: np.ndarray    # [R] tokens the row takes, special tokens included (what a batch pads to)
    first: np.ndarray     # [R] its first target among its sentence's targets
    count: np.ndarray     # [R] how many targets it gives (out[b, :count])
    targets: np.ndarray   # [S] scored targets of each sentence (a sentence without rows gets the empty score)
    data: dict[str, Any] = field(default_factory=dict)  # the scorer's own flat arrays
    # [R] how many consecutive sentences, from ``sentence`` on, the row scores (their targets in order); None: one
    span: np.ndarray | None = None

    @property
    def rows(self) -> int:
        return len(self.sentence)

    def row_sentences(self, picked: np.ndarray | None = None) -> np.ndarray:
        """The sentence of each target-giving (row, sentence) pair of the rows ``picked`` (all: None)."""
        rows = np.arange(self.rows) if picked is None else picked
        if self.span is None:
            return self.sentence[rows]
        owner, within = expand(self.span[rows])
        return self.sentence[rows][owner] + within

    @classmethod
    def one_per_sentence(cls, tokens: Sequence[np.ndarray], targets: np.ndarray, has_row: np.ndarray,
                         **data: Any) -> "RowPool":
        """One row reading all of ``tokens[s]`` for each sentence with ``has_row``; ``data`` gains ``ids`` (all
        tokens, concatenated) and ``start`` (where each row's tokens begin there)."""
        ids, start = concat(tokens)
        sentence = np.flatnonzero(has_row)
        lengths = np.diff(np.r_[start, len(ids)])
        targets = np.asarray(targets, dtype=np.int64)
        return cls(sentence, lengths[sentence], np.zeros(len(sentence), dtype=np.int64), targets[sentence], targets,
                   {"ids": ids, "start": start[sentence], **data})


def concat(arrays: Sequence[np.ndarray], dtype: Any = np.int64) -> tuple[np.ndarray, np.ndarray]:
    """The arrays end to end, and where each begins."""
    lengths = np.fromiter((len(a) for a in arrays), dtype=np.int64, count=len(arrays))
    flat = np.concatenate(arrays).astype(dtype, copy=False) if len(arrays) else np.zeros(0, dtype=dtype)
    return flat, np.cumsum(lengths) - lengths


def expand(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ``counts[i]`` items of each owner i: the owner of each item and its index within the owner."""
    counts = np.asarray(counts, dtype=np.int64)
    owner = np.repeat(np.arange(len(counts)), counts)
    return owner, np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)


def columns(start: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Flat indices ``start[b] + c`` for the columns of a batch padded to its longest row, and which are real
    (None when no row is padded)."""
    width = int(length.max(initial=0))
    index = start[:, None] + np.arange(width)
    if int(length.min(initial=width)) == width:
        return index, None
    return index, np.arange(width) < length[:, None]


def take(flat: np.ndarray, index: np.ndarray, valid: np.ndarray | None, fill: int) -> np.ndarray:
    """``flat[index]`` with ``fill`` where not ``valid`` (an index past the end is only ever a padded column)."""
    out = np.take(flat, index, mode="clip")
    if valid is not None:
        out[~valid] = fill
    return out


def padded(flat: np.ndarray, start: np.ndarray, length: np.ndarray, fill: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Rows ``flat[start[b] : start[b] + length[b]]`` right-padded with ``fill``, and the mask of real columns."""
    index, valid = columns(start, length)
    return take(flat, index, valid, fill), valid


def stack(rows: Sequence[np.ndarray]) -> np.ndarray:
    """Per-row score arrays as ``out[B, W]``, left-aligned (for scorers that compute row by row)."""
    out = np.zeros((len(rows), max((len(r) for r in rows), default=0)))
    for b, row in enumerate(rows):
        out[b, : len(row)] = row
    return out
