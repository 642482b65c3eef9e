"""Batches cut from the global pool of rows (sorted by length, longest first) by a token budget that counts padding."""
from __future__ import annotations


def rows_in_budget(longest: int, budget: int) -> int:
    """How many rows padded to ``longest`` fit in ``budget`` tokens (at least one)."""
    return max(1, budget // max(longest, 1))
