"""The exact conditionals of a PCFG as a scorer, so a known grammar can be "the model" anywhere.

``variant=masked`` is PLL-shaped: log P_G(w_i | w_\\i) per word (inside–outside); ``variant=causal`` is
LL-shaped: log P_G(w_i | w_<i) per word (prefix probabilities), plus log P_G(end | w) with ``score_eos``.
Words are the whitespace-separated tokens of the text; one row per sentence, whose forward pass is its charts.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import ConfigError, ScorerError, UnknownNameError
from ..pcfg import PCFG, UNK, Charts, Induction, load_grammar
from .base import Scorer
from .rows import RowPool, stack

VARIANTS = ("masked", "causal")
OOV_POLICIES = ("error", "unk")


class PCFGScorer(Scorer):
    """Scores from a grammar: ``model`` is a rule file or a treebank to induce one from (``induction``
    options), or pass ``grammar`` directly. ``oov``: ``error`` (an unknown word stops scoring) or ``unk``
    (it is scored as the grammar's ``<unk>`` word)."""

    kind = "pcfg"
    default_budget = gpu_budget = 64  # words per batch; each sentence is its own chart, so this only paces progress
    empty_score = float("-inf")  # a CNF grammar never generates the empty string

    def __init__(self, model: str | None = None, variant: str = "masked", oov: str = "error", score_eos: bool = False,
                 grammar: PCFG | None = None, induction: Mapping[str, Any] | None = None, device: str = "auto",
                 dtype: str = "auto", **common: Any):
        """``device``/``dtype`` are accepted like every scorer's but unused: the charts run in NumPy."""
        super().__init__(**common)
        if variant not in VARIANTS:
            raise UnknownNameError("PCFG variant", variant, VARIANTS)
        if oov not in OOV_POLICIES:
            raise ConfigError(f"oov must be one of {', '.join(OOV_POLICIES)}, not {oov!r}")
        if score_eos and variant != "causal":
            raise ConfigError("score_eos needs variant=causal (masked conditionals have no end event)")
        if grammar is None:
            if model is None:
                raise ConfigError("the pcfg scorer needs a grammar: a rule file or a treebank as `model`")
            grammar = load_grammar(model, Induction(**(induction or {})))
        self.grammar, self.variant, self.oov, self.score_eos = grammar, variant, oov, score_eos
        self.model_name = str(model) if model is not None else "in-memory"
        self.unk = grammar.word_index.get(UNK)
        if oov == "unk" and self.unk is None:
            raise ConfigError(f"oov=unk but grammar {self.model_name!r} has no {UNK!r} word")
        self.charts = Charts(grammar)
        if variant == "causal":
            self.charts.left_corner_closure  # noqa: B018  (checks consistency now, not mid-run)

    @property
    def signature(self) -> str:
        return self._signature(grammar=self.grammar.fingerprint, variant=self.variant, oov=self.oov,
                               eos="scored" if self.score_eos else "no")

    def prepare(self, text: str) -> np.ndarray:
        index = self.grammar.word_index
        ids = [index.get(w, self.unk) for w in text.split()]
        if self.oov == "error" and None in ids:
            unknown = [w for w in text.split() if w not in index]
            raise ScorerError(f"words not in the grammar's vocabulary: {', '.join(map(repr, unknown[:10]))} "
                              f"in {text!r} (oov=unk scores them as {UNK!r} when the grammar has it)")
        return np.asarray(ids, dtype=np.int64)

    def pool(self, sentences: Sequence[np.ndarray]) -> RowPool:
        lengths = np.fromiter((len(s) for s in sentences), dtype=np.int64, count=len(sentences))
        return RowPool.one_per_sentence(sentences, lengths + int(self.score_eos), lengths > 0, sentences=sentences)

    def forward(self, pool: RowPool, picked: np.ndarray) -> np.ndarray:
        """Each row's charts in turn (NumPy per sentence; there is nothing to batch)."""
        rows = [pool.data["sentences"][s] for s in pool.sentence[picked]]
        if self.variant == "masked":
            return stack([self.charts.masked_log_probs(ids) for ids in rows])
        return stack([self.charts.causal_log_probs(ids, eos=self.score_eos) for ids in rows])
