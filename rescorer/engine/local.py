"""Scoring in this process: a row pool run longest first in batches of a token budget, the budget halved on out of
memory, each batch's scores scattered back and finished sentences handed out as they come."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np

from ..bulk import paused_gc
from ..scorers.rows import RowPool, expand
from .batching import rows_in_budget
from .progress import Progress

if TYPE_CHECKING:
    from ..scorers.base import Scorer

TextScore = tuple[float, list[float]]  # (total, per-token scores) of one text
ScoreMap = dict[str, TextScore]


@dataclass
class EngineStats:
    """What one run cost: distinct texts, those found in the store, model rows in all and computed, time."""

    sentences: int = 0
    cached: int = 0
    rows: int = 0
    rows_computed: int = 0
    seconds: float = 0.0
    budgets: list[int] = field(default_factory=list)


def is_oom(err: BaseException) -> bool:
    return "out of memory" in str(err).lower() or type(err).__name__ == "OutOfMemoryError"


class Results:
    """Every target's value in one flat array (a sentence's targets together); a batch's scores land there
    with one scatter, and finished sentences are read out together."""

    def __init__(self, pool: RowPool, keys: Sequence[str], empty_score: float):
        self.pool = pool
        self.remaining = np.bincount(pool.row_sentences(), minlength=len(keys))
        targets = np.where(self.remaining > 0, pool.targets, 0)  # a sentence without rows gets the empty score
        self.keys, self.empty_score, self.targets = keys, empty_score, targets
        self.offset = np.cumsum(targets) - targets
        self.values = np.zeros(int(targets.sum()))
        self.count = pool.count
        self.destination = self.offset[pool.sentence] + pool.first  # where each row's first score goes
        self.one_each = bool(np.all(pool.count == 1))
        self.reported = np.zeros(len(keys), dtype=bool)

    def settle(self, picked: np.ndarray, outputs: Any) -> None:
        """Write the scores of the rows ``picked`` (``out[B, W]``, or a function returning it)."""
        out = np.asarray(outputs() if callable(outputs) else outputs).reshape(len(picked), -1)
        if self.one_each:
            self.values[self.destination[picked]] = out[:, 0]
        else:
            count = self.count[picked]
            row, within = expand(count)
            self.values[self.destination[picked][row] + within] = out[np.arange(out.shape[1]) < count[:, None]]
        np.subtract.at(self.remaining, self.pool.row_sentences(picked), 1)

    def finished(self) -> ScoreMap:
        """The sentences finished since the last call: (total, per-token scores) by text."""
        done = np.flatnonzero((self.remaining == 0) & ~self.reported)
        self.reported[done] = True
        scored = done[self.targets[done] > 0]
        scores = {self.keys[s]: (self.empty_score, []) for s in np.setdiff1d(done, scored, assume_unique=True)}
        if len(scored):
            counts = self.targets[scored]
            row, within = expand(counts)
            values = self.values[self.offset[scored][row] + within]
            starts = np.cumsum(counts) - counts
            totals = np.add.reduceat(values, starts).tolist()
            with paused_gc():
                tokens = values.tolist()
                scores.update((self.keys[s], (total, tokens[a : a + n]))
                              for s, total, a, n in zip(scored.tolist(), totals, starts.tolist(), counts.tolist()))
        return scores


def compute(scorer: "Scorer", todo: Sequence[str], budget: int | None, stats: EngineStats,
            progress: bool | None = None, flush_seconds: float = 2.0, label: str | None = None) -> Iterator[ScoreMap]:
    """Score the distinct texts ``todo`` in this process; yield finished sentences every ``flush_seconds``
    (progress shown under ``label``, default the scorer's kind)."""
    pool = scorer.pool(scorer.prepare_all(todo))
    return run_pool(scorer, pool, todo, budget, stats, progress, flush_seconds, label)


def run_pool(scorer: "Scorer", pool: RowPool, keys: Sequence[str], budget: int | None, stats: EngineStats,
             progress: bool | None = None, flush_seconds: float = 2.0, label: str | None = None) -> Iterator[ScoreMap]:
    """Run the rows of ``pool`` (sentence i is ``keys[i]``), longest first in batches of ``budget`` tokens;
    yield finished sentences every ``flush_seconds``. An out-of-memory error halves the budget and retries."""
    order = np.argsort(-pool.length, kind="stable")
    length = pool.length[order]
    results = Results(pool, keys, scorer.empty_score)
    stats.rows += pool.rows
    budget = budget or scorer.preferred_budget()
    last_flush = time.perf_counter()
    bar = Progress(scorer.kind, stats.sentences, stats.cached, pool.rows, int(pool.length.sum()), progress,
                   label=label)
    try:
        position, pending = 0, None  # pending: the batch launched last, read after the next one is launched
        while position < pool.rows:
            picked = order[position : position + rows_in_budget(int(length[position]), budget)]
            try:
                outputs = scorer.forward(pool, picked)
            except RuntimeError as err:
                if not is_oom(err) or budget <= int(length[position]):
                    raise
                budget //= 2
                stats.budgets.append(budget)
                scorer.release_memory()
                continue
            if pending is not None:
                results.settle(*pending)
            pending, position = (picked, outputs), position + len(picked)
            stats.rows_computed += len(picked)
            bar.update(len(picked), int(pool.length[picked].sum()))
            if time.perf_counter() - last_flush > flush_seconds:
                yield results.finished()
                last_flush = time.perf_counter()
        if pending is not None:
            results.settle(*pending)
    finally:
        bar.close()
    yield results.finished()
