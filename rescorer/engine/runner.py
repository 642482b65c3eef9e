"""The engine: dedupe texts, reuse the score store, batch rows by token budget, back off on OOM, show progress."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np
from tqdm.auto import tqdm

from ..store import ScoreStore
from .batching import row_pool, rows_in_budget

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


def compute(scorer: "Scorer", todo: Sequence[str], budget: int | None, stats: EngineStats,
            progress: bool | None = None, flush_seconds: float = 2.0) -> Iterator[ScoreMap]:
    """Score the distinct texts ``todo`` in this process; yield finished sentences every ``flush_seconds``."""
    sentences = [scorer.prepare(t) for t in todo]
    rows = np.array([scorer.num_rows(s) for s in sentences], dtype=np.int64)
    lengths = np.array([scorer.row_length(s) for s in sentences], dtype=np.int64)
    sentence_of, row_of, length_of = row_pool(rows, lengths)
    stats.rows += len(sentence_of)
    values = [np.zeros(scorer.num_targets(s)) for s in sentences]
    remaining = rows.copy()
    finished: ScoreMap = {todo[i]: (scorer.empty_score, []) for i in np.flatnonzero(remaining == 0)}
    budget = budget or scorer.preferred_budget()
    last_flush = time.perf_counter()

    def settle(picked: slice, outputs: Any) -> None:
        for s, r, out in zip(sentence_of[picked], row_of[picked], outputs() if callable(outputs) else outputs):
            values[s][scorer.targets(sentences[s], int(r))] = out
            remaining[s] -= 1
            if remaining[s] == 0:
                finished[todo[s]] = (float(values[s].sum()), values[s].tolist())

    with tqdm(total=len(sentence_of), unit="row", desc=scorer.kind, disable=None if progress is None else not progress,
              dynamic_ncols=True) as bar:
        position, pending = 0, None  # pending: the batch launched last, read after the next one is launched
        while position < len(sentence_of):
            picked = slice(position, min(len(sentence_of), position + rows_in_budget(int(length_of[position]), budget)))
            items = [(sentences[s], int(r)) for s, r in zip(sentence_of[picked], row_of[picked])]
            try:
                outputs = scorer.forward(items)
            except RuntimeError as err:
                if not is_oom(err) or budget <= int(length_of[position]):
                    raise
                budget //= 2
                stats.budgets.append(budget)
                scorer.release_memory()
                continue
            if pending is not None:
                settle(*pending)
            pending, position = (picked, outputs), picked.stop
            stats.rows_computed += len(items)
            bar.update(len(items))
            if time.perf_counter() - last_flush > flush_seconds:
                yield finished
                finished, last_flush = {}, time.perf_counter()
        if pending is not None:
            settle(*pending)
    yield finished


class Engine:
    """Runs scorers over texts: ``store`` (a SQLite path or a :class:`ScoreStore`; texts found there are not scored
    again and finished ones are stored as they come, so an interrupted run resumes), ``budget`` (tokens per batch,
    padding counted; None: the scorer's preference), ``progress`` (None: a bar on terminals), ``flush_seconds``
    (how often finished sentences are stored) and ``scale`` (None: this process; a
    :class:`~rescorer.engine.scale.ScaleConfig`: Ray actors or one process per GPU)."""

    def __init__(self, store: str | Path | ScoreStore | None = None, budget: int | None = None,
                 progress: bool | None = None, flush_seconds: float = 2.0, scale: Any = None):
        self.store = ScoreStore(store) if isinstance(store, (str, Path)) else store
        self.budget, self.progress, self.flush_seconds, self.scale = budget, progress, flush_seconds, scale

    def run(self, scorer: "Scorer", texts: Sequence[str]) -> tuple[ScoreMap, EngineStats]:
        """Scores of the distinct ``texts``, exactly as given, and what they cost."""
        start = time.perf_counter()
        unique = list(dict.fromkeys(texts))
        signature = scorer.signature
        done = self.store.get(signature, unique) if self.store is not None else {}
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
