"""Training batches: which examples a step sees (a pure function of the step, so a resumed run sees the same
batches) and token-id rows padded into arrays."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..scorers.rows import concat, padded


def stream_indices(step: int, n: int, size: int, seed: int) -> np.ndarray:
    """Examples of batch ``step`` when batches run through a stream of epochs, each a permutation seeded by
    ``seed + epoch`` (a batch is cut short at the end of an epoch)."""
    epoch, start = divmod(step * size, n)
    order = np.random.default_rng(seed + epoch).permutation(n)
    return order[start : start + size]


def epoch_indices(step: int, n: int, size: int, seed: int) -> np.ndarray:
    """Examples of batch ``step`` when every epoch has ``ceil(n / size)`` batches of a permutation seeded by
    ``[seed, epoch]`` (the last one short)."""
    epoch, index = divmod(step, math.ceil(n / size))
    order = np.random.default_rng([seed, epoch]).permutation(n)
    return order[index * size : (index + 1) * size]


def block_indices(step: int, n: int, size: int, seed: int) -> np.ndarray:
    """Examples of batch ``step`` when every epoch has ``ceil(n / size)`` batches of ``size`` consecutive examples
    (the last one short), taken in a permutation seeded by ``[seed, epoch]``: examples that belong together (the
    hypotheses read after one context) stay in one batch."""
    blocks = math.ceil(n / size)
    epoch, index = divmod(step, blocks)
    block = int(np.random.default_rng([seed, epoch]).permutation(blocks)[index])
    return np.arange(block * size, min((block + 1) * size, n))


def pad(rows: Sequence[Sequence[int]], value: int) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` right-padded with ``value`` into an int64 array (the scorers' ``rows.padded``), and the mask of
    real entries."""
    flat, start = concat([np.asarray(r, dtype=np.int64) for r in rows])
    ids, valid = padded(flat, start, np.array([len(r) for r in rows], dtype=np.int64), value)
    return ids, np.ones(ids.shape, dtype=bool) if valid is None else valid
