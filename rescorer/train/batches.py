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


def list_units(lists: Sequence[str | None], size: int) -> tuple[list[np.ndarray], np.ndarray]:
    """The examples of each N-best list (``lists[i]``: the list of example i, None for none), in order of first
    appearance, a list of more than ``size`` examples cut into as few even parts as hold at most ``size`` each; and
    the examples of no list."""
    units: dict[str, list[int]] = {}
    loose = []
    for i, key in enumerate(lists):
        (loose if key is None else units.setdefault(key, [])).append(i)
    return ([part for unit in units.values() for part in np.array_split(np.array(unit), math.ceil(len(unit) / size))],
            np.array(loose, dtype=np.int64))


def list_batches(step: int, lists: Sequence[np.ndarray], loose: np.ndarray, size: int, seed: int) -> np.ndarray:
    """Examples of batch ``step`` when a batch holds one of ``lists`` (an N-best list or a part of one) or ``size``
    examples of no list: every epoch shuffles the examples of no list, cuts them into batches and shuffles those
    with the lists' batches, seeded by ``[seed, epoch]``."""
    per_epoch = len(lists) + math.ceil(len(loose) / size)
    epoch, index = divmod(step, per_epoch)
    rng = np.random.default_rng([seed, epoch])
    shuffled = rng.permutation(loose)
    batch = int(rng.permutation(per_epoch)[index])
    if batch < len(lists):
        return lists[batch]
    start = (batch - len(lists)) * size
    return shuffled[start : start + size]


def pad(rows: Sequence[Sequence[int]], value: int) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` right-padded with ``value`` into an int64 array (the scorers' ``rows.padded``), and the mask of
    real entries."""
    flat, start = concat([np.asarray(r, dtype=np.int64) for r in rows])
    ids, valid = padded(flat, start, np.array([len(r) for r in rows], dtype=np.int64), value)
    return ids, np.ones(ids.shape, dtype=bool) if valid is None else valid
