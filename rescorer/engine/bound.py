"""A scorer bound to an engine: what tasks, recipes and Python users call (``rescorer.load_scorer``)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from ..metrics import Perplexity

if TYPE_CHECKING:
    from ..context import Context
    from ..normalise import Normaliser
    from ..scorers.base import Scorer
    from .runner import Engine, ScoredTexts


class BoundScorer:
    """``adapter`` (the model) run by ``engine`` (batching, store, scale-out), shown as ``name`` (its column;
    default: its kind) in progress lines."""

    def __init__(self, adapter: "Scorer", engine: "Engine", name: str | None = None):
        self.adapter, self.engine, self.name = adapter, engine, name or adapter.kind

    def named(self, name: str) -> "BoundScorer":
        """The same scorer, shown as ``name``."""
        return BoundScorer(self.adapter, self.engine, name)

    @property
    def kind(self) -> str:
        return self.adapter.kind

    @property
    def signature(self) -> str:
        return self.adapter.signature

    @property
    def context(self) -> "Context | None":
        """What the scorer reads before each text (:mod:`rescorer.context`), None for sentences alone."""
        return self.adapter.context

    @property
    def normaliser(self) -> "Normaliser":
        """How this scorer turns a text into what it scores (case and period policy), with its signature."""
        return self.adapter.normaliser

    @property
    def spec(self) -> "dict[str, Any] | None":
        """The ``load_scorer`` options that load this scorer again; None for a model built in memory."""
        return self.adapter.spec

    @property
    def tokenizer(self) -> Any:
        """The model's tokenizer."""
        return self.adapter.tokenizer

    @property
    def store_path(self) -> "Path | None":
        """The score store this scorer reads and writes, None without one."""
        return None if self.engine.store is None else self.engine.store.path

    def contexts_cut_in(self, texts: Sequence[str]) -> int:
        """How many of the distinct ``texts`` have their context cut to fit the model (none are scored)."""
        return self.adapter.contexts_cut_in(texts)

    def normalise(self, texts: Sequence[str]) -> list[str]:
        """The texts as this scorer scores them (its case and period policy)."""
        return [self.adapter.normaliser(t) for t in texts]

    def compute(self, texts: Sequence[str], normalise: bool = True) -> "ScoredTexts":
        """Totals, per-token scores and cost of ``texts`` (``normalise=False``: score them exactly as given)."""
        return self.engine.score(self.adapter, texts, normalise, self.name)

    def score(self, texts: Sequence[str]) -> list[float]:
        """Summed log-score of each text (natural log, higher = better)."""
        return self.compute(texts).totals

    def token_scores(self, texts: Sequence[str]) -> list[list[float]]:
        """Per-token log-probs of each text, in token order (special tokens never scored)."""
        return self.compute(texts).tokens

    def perplexity(self, texts: Sequence[str]) -> Perplexity:
        """Token- and word-level (pseudo-)perplexity of ``texts`` (words of the scored text)."""
        scored = self.compute(texts)
        return Perplexity.of(scored.tokens, scored.texts)

    def view(self, adapter: "Scorer") -> "BoundScorer":
        """Another adapter of the same model (e.g. a next-token readout) on the same engine."""
        return BoundScorer(adapter, self.engine)
