"""The engine: dedupe texts, reuse the score store, score the rest here or on workers, store them as they come."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from ..store import ScoreStore
from .local import EngineStats, ScoreMap, TextScore, compute

if TYPE_CHECKING:
    from ..scorers.base import Scorer


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

    def run(self, scorer: "Scorer", texts: Sequence[str], label: str | None = None) -> tuple[ScoreMap, EngineStats]:
        """Scores of the distinct ``texts``, exactly as given, and what they cost (progress shown under
        ``label``, default the scorer's kind)."""
        start = time.perf_counter()
        unique = list(dict.fromkeys(texts))
        signature = scorer.store_key
        done = self.store.get(signature, unique) if unique and self.store is not None else {}
        todo = [t for t in unique if t not in done]
        stats = EngineStats(sentences=len(unique), cached=len(done))
        if todo:
            for chunk in self._chunks(scorer, todo, stats, label):
                done.update(chunk)
                if self.store is not None:
                    self.store.put(signature, chunk)
        stats.seconds = time.perf_counter() - start
        return done, stats

    def _chunks(self, scorer: "Scorer", todo: list[str], stats: EngineStats, label: str | None) -> Iterator[ScoreMap]:
        if self.scale is not None and scorer.spec is not None:  # in-memory models score here
            from .scale import scale_out

            return scale_out(scorer, todo, self.scale, self.budget, self.progress, stats, label)
        return compute(scorer, todo, self.budget, stats, self.progress, self.flush_seconds, label)

    def score(self, scorer: "Scorer", texts: Sequence[str], normalise: bool = True,
              label: str | None = None) -> ScoredTexts:
        """Scores of ``texts`` in order; ``normalise`` first applies the scorer's normaliser (``False``: score
        prompts and templates exactly as given, newlines and all); progress shows ``label`` (its column)."""
        scored = [scorer.normaliser(t) for t in texts] if normalise else list(texts)
        results, stats = self.run(scorer, scored, label)
        return ScoredTexts(scored, [results[t][0] for t in scored], [results[t][1] for t in scored], stats)
