"""The ids a reader has met, in a few bytes each however long the list: to refuse an id met twice."""
from __future__ import annotations

from typing import Hashable

import numpy as np


class Seen:
    """The keys a reader has met (utterance ids), each with a number (where it was met; 0 unless given), in about 8
    bytes a key however many there are (16 where numbers are given): the latest :data:`RECENT` in a dict, the others
    as the sorted 64-bit hashes of their keys, with their numbers beside them (two keys of one hash, a chance of
    2**-64 a pair, would be taken for one)."""

    RECENT = 1 << 16

    def __init__(self) -> None:
        self.recent: dict[Hashable, int] = {}
        self.hashes = np.empty(0, dtype=np.int64)
        self.numbers: np.ndarray | None = None  # None while every number is 0

    def _older(self, key: Hashable) -> int | None:
        """Where ``key`` is among the older keys, if it is."""
        if not self.hashes.size:
            return None
        code = hash(key)
        at = int(np.searchsorted(self.hashes, code))
        return at if at < self.hashes.size and self.hashes[at] == code else None

    def get(self, key: Hashable) -> int | None:
        """The number ``key`` was met with, None if it was not."""
        found = self.recent.get(key)
        if found is None and (at := self._older(key)) is not None:
            return 0 if self.numbers is None else int(self.numbers[at])
        return found

    def __contains__(self, key: Hashable) -> bool:
        return self.get(key) is not None

    def __getitem__(self, key: Hashable) -> int:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def __setitem__(self, key: Hashable, number: int) -> None:
        at = self._older(key) if key not in self.recent else None
        if at is not None:
            self._numbers()[at] = number
            return
        self.recent[key] = number
        if len(self.recent) >= self.RECENT:
            self._settle()

    def add(self, key: Hashable, number: int = 0) -> None:
        self[key] = number

    def _numbers(self) -> np.ndarray:
        if self.numbers is None:
            self.numbers = np.zeros(self.hashes.size, dtype=np.int64)
        return self.numbers

    def _settle(self) -> None:
        """The recent keys moved among the older ones, in one insertion (one new array of each kind)."""
        codes = np.fromiter(map(hash, self.recent), dtype=np.int64, count=len(self.recent))
        order = np.argsort(codes, kind="stable")
        at = np.searchsorted(self.hashes, codes[order])
        if self.numbers is not None or any(self.recent.values()):
            numbers = np.fromiter(self.recent.values(), dtype=np.int64, count=len(self.recent))
            self.numbers = np.insert(self._numbers(), at, numbers[order])
        self.hashes = np.insert(self.hashes, at, codes[order])
        self.recent = {}
