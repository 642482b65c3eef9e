"""total(h) = Σ_k w_k · s_k(h) / lp_k(h) + β·|h|_words (spec §3), vectorised over [utterances × N × columns]."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from ..errors import ConfigError
from ..types import NBest

PENALTIES = ("none", "gnmt", "tokens")
WORDS = "words"  # the pseudo-column |h|_words: its weight is the word bonus β


@dataclass(frozen=True)
class Column:
    """A score column in the combination: its length penalty, and the weights it is searched over."""

    name: str
    penalty: str = "none"
    alpha: float = 1.0
    range: tuple[float, float] = (0.0, 1.0)
    step: float = 0.1

    def __post_init__(self) -> None:
        if self.penalty not in PENALTIES:
            raise ConfigError(f"column {self.name}: penalty must be one of {', '.join(PENALTIES)}, not {self.penalty!r}")
        lo, hi = self.range
        if not (self.step > 0 and hi >= lo):
            raise ConfigError(f"column {self.name}: need range lo ≤ hi and step > 0, got {self.range} step {self.step}")

    @property
    def grid(self) -> np.ndarray:
        lo, hi = self.range
        return np.round(lo + self.step * np.arange(int(round((hi - lo) / self.step)) + 1), 10)

    def penalise(self, scores: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        if self.penalty == "gnmt":
            return scores / ((5.0 + lengths) / 6.0) ** self.alpha
        if self.penalty == "tokens":
            return scores / np.maximum(lengths, 1)
        return scores


@dataclass
class Features:
    """Penalised column values ``values[u, n, k]`` (k = 0 is the base column, weight 1) and the valid-hypothesis mask."""

    names: list[str]
    values: np.ndarray
    valid: np.ndarray
    lengths: np.ndarray = field(repr=False)  # hypotheses per utterance

    @classmethod
    def of(cls, nbest: NBest, base: Column, tuned: Sequence[Column],
           token_counts: Mapping[str, Sequence[int]] | None = None) -> "Features":
        """Gather ``base`` and ``tuned`` columns; lengths for penalties are the column's tokens if given, else words."""
        columns = [base, *tuned]
        counts = np.array([len(u.hyps) for u in nbest], dtype=np.int64)
        width = max(int(counts.max(initial=0)), 1)
        valid = np.arange(width)[None, :] < counts[:, None]
        values = np.zeros((len(nbest), width, len(columns)))
        words = np.array([len(h.words) for u in nbest for h in u.hyps], dtype=float)
        for k, column in enumerate(columns):
            flat = words if column.name == WORDS else _column(nbest, column.name)
            given = (token_counts or {}).get(column.name)
            lengths = np.asarray(given, dtype=float) if given is not None else words
            values[..., k][valid] = column.penalise(flat, lengths)
        return cls([c.name for c in columns], values, valid, counts)


def _column(nbest: NBest, name: str) -> np.ndarray:
    try:
        return np.array([h.scores[name] for u in nbest for h in u.hyps], dtype=float)
    except KeyError:
        utt, k, hyp = next((u, k, h) for u in nbest for k, h in enumerate(u.hyps, 1) if name not in h.scores)
        where = utt.origin or nbest.source
        raise ConfigError(f"{where}: utterance {utt.id!r} (hypothesis {k}) has no score column {name!r}; it has "
                          f"{', '.join(hyp.scores) or 'none'} (LM columns come from scorer=...)") from None


def totals(features: Features, weights: np.ndarray) -> np.ndarray:
    """Totals ``[..., U, N]`` for weight rows ``[..., K-1]`` (the base column has weight 1); invalid slots are −inf."""
    weights = np.asarray(weights, dtype=float)
    full = np.concatenate([np.ones(weights.shape[:-1] + (1,)), weights], axis=-1)
    out = np.einsum("unk,...k->...un", features.values, full)
    return np.where(features.valid, out, -np.inf)


def best_ranks(features: Features, weights: np.ndarray) -> np.ndarray:
    """The 0-based rank of the highest total per utterance (ties → the earlier, i.e. the toolkit's order)."""
    return totals(features, weights).argmax(-1)
