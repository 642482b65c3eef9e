"""The engine: dedupe texts, reuse the score store, batch rows by token budget, back off on OOM, show progress."""
from __future__ import annotations

import contextlib
import gc
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np
from ..store import ScoreStore
from ..scorers.rows import RowPool, expand
from .batching import rows_in_budget
from .progress import Progress

if TYPE_CHECKING:
    from ..scorers.base import Scorer
    from .bound import BoundScorer

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


@dataclass(frozen=True)
class ScoredTexts:
    """Scores of texts in the order asked: the texts as scored, their totals and per-token scores, the cost."""

    texts: list[str]
    totals: list[float]
    tokens: list[list[float]]
    stats: EngineStats

    def __len__(self) -> int:
        return len(self.texts)

    def __iter__(self) -> Iterator[TextScore]:
        return zip(self.totals, self.tokens)

    def by_text(self) -> ScoreMap:
        return dict(zip(self.texts, zip(self.totals, self.tokens)))


def is_oom(err: BaseException) -> bool:
    return "out of memory" in str(err).lower() or type(err).__name__ == "OutOfMemoryError"


class Results:
    """Every target's value in one flat array (a sentence's targets together); a batch's scores land there
    with one scatter, and finished sentences are read out together."""

    def __init__(self, pool: RowPool, keys: Sequence[str], empty_score: float):
        self.remaining = np.bincount(pool.sentence, minlength=len(keys))
        targets = np.where(self.remaining > 0, pool.targets, 0)  # a sentence without rows gets the empty score
        self.keys, self.empty_score, self.targets = keys, empty_score, targets
        self.offset = np.cumsum(targets) - targets
        self.values = np.zeros(int(targets.sum()))
        self.sentence, self.count = pool.sentence, pool.count
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
        np.subtract.at(self.remaining, self.sentence[picked], 1)

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


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection while many small lists are made (it would scan them again and again)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def compute(scorer: "Scorer", todo: Sequence[str], budget: int | None, stats: EngineStats,
            progress: bool | None = None, flush_seconds: float = 2.0) -> Iterator[ScoreMap]:
    """Score the distinct texts ``todo`` in this process; yield finished sentences every ``flush_seconds``."""
    pool = scorer.pool(scorer.prepare_all(todo))
    return run_pool(scorer, pool, todo, budget, stats, progress, flush_seconds)


def run_pool(scorer: "Scorer", pool: RowPool, keys: Sequence[str], budget: int | None, stats: EngineStats,
             progress: bool | None = None, flush_seconds: float = 2.0) -> Iterator[ScoreMap]:
    """Run the rows of ``pool`` (sentence i is ``keys[i]``), longest first in batches of ``budget`` tokens;
    yield finished sentences every ``flush_seconds``. An out-of-memory error halves the budget and retries."""
    order = np.argsort(-pool.length, kind="stable")
    length = pool.length[order]
    results = Results(pool, keys, scorer.empty_score)
    stats.rows += pool.rows
    budget = budget or scorer.preferred_budget()
    last_flush = time.perf_counter()
    bar = Progress(scorer.kind, stats.sentences, stats.cached, pool.rows, int(pool.length.sum()), progress)
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


class Engine:
    """Runs scorers over texts: ``store`` (a SQLite path or a :class:`ScoreStore`; texts found there are not scored
    again and finished ones are stored as they come, so an interrupted run resumes), ``budget`` (tokens per batch,
    padding counted; None: the scorer's preference), ``progress`` (None: a bar on terminals), ``flush_seconds``
    (how often finished sentences are stored) and ``scale`` (None: this process; a
    :class:`~rescorer.engine.scale.ScaleConfig`: Ray actors or one process per GPU)."""

    def __init__(self, store: str | Path | ScoreStore | None = None, budget: int | None = None,
                 progress: bool | None = None, flush_seconds: float = 2.0, scale: Any = None):
        self._store = store
        self.budget, self.progress, self.flush_seconds, self.scale = budget, progress, flush_seconds, scale

    @property
    def store(self) -> ScoreStore | None:
        """The score store, opened when first needed: a run that scores nothing never touches it."""
        if isinstance(self._store, (str, Path)):
            self._store = ScoreStore(self._store)
        return self._store

    def run(self, scorer: "Scorer", texts: Sequence[str]) -> tuple[ScoreMap, EngineStats]:
        """Scores of the distinct ``texts``, exactly as given, and what they cost."""
        start = time.perf_counter()
        unique = list(dict.fromkeys(texts))
        signature = scorer.signature
        done = self.store.get(signature, unique) if unique and self.store is not None else {}
        todo = [t for t in unique if t not in done]
        stats = EngineStats(sentences=len(unique), cached=len(done))
        if todo:
            for chunk in self._chunks(scorer, todo, stats):
                done.update(chunk)
                if self.store is not None:
                    self.store.put(signature, chunk)
        stats.seconds = time.perf_counter() - start
        return done, stats

    def _chunks(self, scorer: "Scorer", todo: list[str], stats: EngineStats) -> Iterator[ScoreMap]:
        if self.scale is not None and scorer.spec is not None:  # in-memory models score here
            from .scale import scale_out

            return scale_out(scorer, todo, self, stats)
        return compute(scorer, todo, self.budget, stats, self.progress, self.flush_seconds)

    def score(self, scorer: "Scorer", texts: Sequence[str], normalise: bool = True) -> ScoredTexts:
        """Scores of ``texts`` in order; ``normalise`` first applies the scorer's normaliser (``False``: score
        prompts and templates exactly as given, newlines and all)."""
        scored = [scorer.normaliser(t) for t in texts] if normalise else list(texts)
        results, stats = self.run(scorer, scored)
        return ScoredTexts(scored, [results[t][0] for t in scored], [results[t][1] for t in scored], stats)

    def bind(self, scorer: "Scorer") -> "BoundScorer":
        """``scorer`` with this engine: one object with ``.score(texts)``, ``.perplexity(texts)``, …"""
        from .bound import BoundScorer

        return BoundScorer(scorer, self)
