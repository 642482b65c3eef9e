"""Texts that share their context, read once: a row holds the context and, after it, each text that reads it.

A student reads a hypothesis after the previous utterances (its context). The hypotheses of one utterance share
that context, so a row holds the context's tokens once (segment 0) and then each text's own tokens (segments 1, 2,
…), each at the positions it would have alone after the context. The context attends only to itself and a text's
tokens to the context and to themselves (a 4D attention mask), so each text gets what it would get in a row of its
own: the context never sees the text, in training as in scoring. A text without context is a row of its own.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Sequence

import numpy as np

from .rows import padded

PACKED_TOKENS = 512  # tokens of one packed row (its attention mask is tokens²); a longer text gets a row of its own


class SegmentInput(NamedTuple):
    """One text as a student reads it: its token ids, the positions it scores, and how many leading ids are its
    context (0: none), which it shares with the texts after it that have the same context."""

    ids: np.ndarray
    scored: np.ndarray
    prefix: int

    def cut(self, length: int) -> "SegmentInput":
        """The text's first ``length`` ids."""
        return SegmentInput(self.ids[:length], self.scored[self.scored < length], min(self.prefix, length))


@dataclass(frozen=True)
class Packed:
    """Rows as flat arrays: per token its id, segment and position; per row where its tokens begin, how many there
    are, its first text and how many consecutive texts it holds; per text its row and ``at``, the column of its id
    ``j`` (``j`` ≥ its prefix) being ``at + j``."""

    ids: np.ndarray
    segment: np.ndarray
    position: np.ndarray
    row_start: np.ndarray
    row_length: np.ndarray
    row_first: np.ndarray
    row_texts: np.ndarray
    text_row: np.ndarray
    text_at: np.ndarray


def pack(inputs: Sequence[SegmentInput], limit: int = PACKED_TOKENS) -> Packed:
    """Consecutive texts with the same context in shared rows of at most ``limit`` tokens; a text that scores nothing
    gets no row (``text_row`` −1)."""
    pieces: list[tuple[np.ndarray, int, int]] = []  # (ids, segment, first position)
    row_start, row_length, row_first, row_texts = [], [], [], []
    text_row = np.full(len(inputs), -1, dtype=np.int64)
    text_at = np.zeros(len(inputs), dtype=np.int64)
    context, tokens = None, 0
    for s, text in enumerate(inputs):
        if not len(text.scored):
            context = None
            continue
        shared, own = text.ids[: text.prefix], text.ids[text.prefix :]
        if (not text.prefix or context is None or not np.array_equal(shared, context)
                or row_length[-1] + len(own) > limit):
            row_start.append(tokens)
            row_length.append(len(shared))
            row_first.append(s)
            row_texts.append(0)
            context = shared if text.prefix else None
            if text.prefix:
                pieces.append((shared, 0, 0))
                tokens += len(shared)
        row_texts[-1] += 1
        text_row[s], text_at[s] = len(row_start) - 1, row_length[-1] - text.prefix
        pieces.append((own, row_texts[-1], text.prefix))
        row_length[-1] += len(own)
        tokens += len(own)
    lengths = np.fromiter((len(ids) for ids, _, _ in pieces), dtype=np.int64, count=len(pieces))
    as_int = lambda values: np.asarray(values, dtype=np.int64)  # noqa: E731
    flat = lambda arrays: np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)  # noqa: E731
    return Packed(
        flat([ids.astype(np.int64, copy=False) for ids, _, _ in pieces]),
        np.repeat(as_int([segment for _, segment, _ in pieces]), lengths),
        flat([np.arange(first, first + n) for (_, _, first), n in zip(pieces, lengths)]),
        as_int(row_start), as_int(row_length), as_int(row_first), as_int(row_texts), text_row, text_at)


def rows_batch(packed: Packed, picked: np.ndarray, pad_id: int) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """The rows ``picked``, right-padded: token ids, positions (None where no row shares a context: each text at
    0, 1, …, as the model counts by default) and the attention mask, [B, L] or, where a row shares a context,
    [B, 1, L, L] (a padded position attends to itself only)."""
    start, length = packed.row_start[picked], packed.row_length[picked]
    ids, valid = padded(packed.ids, start, length, pad_id)
    segment, _ = padded(packed.segment, start, length, -1)
    if segment.max(initial=0) <= 1:
        return ids, None, np.ones(ids.shape, dtype=np.int64) if valid is None else valid.astype(np.int64)
    position, _ = padded(packed.position, start, length, 0)
    key, query = segment[:, None, :], segment[:, :, None]
    mask = (key >= 0) & ((key == 0) | (key == query)) | np.eye(segment.shape[1], dtype=bool)
    return ids, position, mask[:, None]
