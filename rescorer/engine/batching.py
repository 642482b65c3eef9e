"""The global pool of rows, sorted by length and packed into batches by a token budget that counts padding."""
from __future__ import annotations

import numpy as np


def row_pool(rows_per_sentence: np.ndarray, length_per_sentence: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One entry per row: (sentence index, row index within the sentence, padded length), longest first."""
    counts = np.asarray(rows_per_sentence, dtype=np.int64)
    sentence = np.repeat(np.arange(len(counts)), counts)
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    row = np.arange(len(sentence)) - starts
    length = np.asarray(length_per_sentence, dtype=np.int64)[sentence]
    order = np.lexsort((row, sentence, -length))
    return sentence[order], row[order], length[order]


def rows_in_budget(longest: int, budget: int) -> int:
    """How many rows padded to ``longest`` fit in ``budget`` tokens (at least one)."""
    return max(1, budget // max(longest, 1))

