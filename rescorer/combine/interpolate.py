"""total(h) = Σ_k w_k · s_k(h) / lp_k(h) + β·|h|_words, vectorised over [utterances × N × columns]."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from numbers import Real
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import ConfigError, check_known
from ..options import Option
from ..types import NBest

PENALTIES = ("none", "gnmt", "tokens", "auto")  # auto: tokens for an LM column when the base is per token, else none
MAX_GRID = 10_000_000  # weights one column may be searched over
GRID_TOLERANCE = 1e-9  # of a step: hi - lo that is a whole number of steps up to rounding error reaches hi
WORD_COUNT_COLUMN = "words"  # the pseudo-column |h|_words: its weight is the word bonus β


@dataclass(frozen=True)
class Column:
    """A score column in the combination: its length penalty, and the weights it is searched over."""

    name: str
    penalty: str = "none"
    alpha: float = 1.0
    range: tuple[float, float] = (0.0, 1.0)
    step: float = 0.1

    @classmethod
    def of(cls, name: str, spec: Mapping[str, Any] | None) -> "Column":
        """From a config entry (``task.columns.<name>``); an unknown key is an error naming the known ones."""
        Option("mapping", null=True, example="{range, step, penalty, alpha}").check(f"column {name}", spec)
        check_known(f"column {name} key", spec or {}, {f.name for f in fields(cls)} - {"name"})
        values = {k: tuple(v) if k == "range" and isinstance(v, list) else v for k, v in (spec or {}).items()}
        return cls(name, **{"penalty": "auto", **values})

    def __post_init__(self) -> None:
        if self.penalty not in PENALTIES:
            raise ConfigError(f"column {self.name}: penalty must be one of {', '.join(PENALTIES)}, not {self.penalty!r}")
        numbers = [self.alpha, self.step, *(self.range if isinstance(self.range, (tuple, list)) else [None])]
        if not isinstance(self.range, (tuple, list)) or len(self.range) != 2 or not all(
                isinstance(x, Real) and not isinstance(x, bool) and np.isfinite(x) for x in numbers):
            raise ConfigError(f"column {self.name}: range must be two numbers and step, alpha numbers, "
                              f"got range={self.range!r} step={self.step!r} alpha={self.alpha!r}")
        lo, hi = self.range
        if not (self.step > 0 and hi >= lo):
            raise ConfigError(f"column {self.name}: need range lo ≤ hi and step > 0, got {self.range} step {self.step}")

    @property
    def size(self) -> int:
        """How many weights the grid holds (counted, not built): lo, lo + step, … up to hi, never past it; a step
        that lands on hi within rounding error (1e-9 of a step) counts."""
        lo, hi = self.range
        steps = (hi - lo) / self.step
        if not math.isfinite(steps):
            raise ConfigError(f"column {self.name}: range {self.range} in steps of {self.step} is too many weights "
                              f"(at most {MAX_GRID:,})")
        return math.floor(steps + GRID_TOLERANCE) + 1

    @property
    def grid(self) -> np.ndarray:
        """The weights searched: ``size`` steps from lo, each rounded to 10 decimals and never above hi."""
        if self.size > MAX_GRID:
            raise ConfigError(f"column {self.name}: range {self.range} in steps of {self.step} is {self.size:,} "
                              f"weights (at most {MAX_GRID:,})")
        return np.minimum(np.round(self.range[0] + self.step * np.arange(self.size), 10), self.range[1])

    def penalise(self, scores: np.ndarray, hyp_lengths: np.ndarray) -> np.ndarray:
        """``scores`` divided by this column's length penalty of ``hyp_lengths`` (tokens or words per hypothesis)."""
        if self.penalty == "auto":
            raise ConfigError(f"column {self.name}: penalty auto is decided from the data before scores are combined")
        if self.penalty == "gnmt":
            return scores / ((5.0 + hyp_lengths) / 6.0) ** self.alpha
        if self.penalty == "tokens":
            return scores / np.maximum(hyp_lengths, 1)
        return scores


@dataclass
class Features:
    """Penalised column values ``values[u, n, k]`` (k = 0 is the base column, weight 1), the valid-hypothesis mask
    and, where known, the list they come from (which errors name an utterance by)."""

    names: list[str]
    values: np.ndarray
    valid: np.ndarray
    hyps_per_utterance: np.ndarray = field(repr=False)
    nbest: NBest | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, nbest: NBest, base: Column, tuned: Sequence[Column],
           token_counts: Mapping[str, Sequence[int]] | None = None,
           flat_columns: Mapping[str, np.ndarray] | None = None) -> "Features":
        """Gather ``base`` and ``tuned`` columns: from ``flat_columns`` ({name: values ``[hypotheses]`` in
        ``nbest.texts()`` order}) where given, else from the hypotheses' scores; a penalty divides by the
        column's ``token_counts`` if given, else by words."""
        columns = [base, *tuned]
        counts = np.array([len(u.hyps) for u in nbest], dtype=np.int64)
        words = _words(nbest) if needs_words(columns) else None
        lengths = [np.asarray(given, dtype=float) if (given := (token_counts or {}).get(c.name)) is not None
                   else words for c in columns]
        gathered = cls.gathered(columns, counts, [_flat(nbest, c.name, words, flat_columns or {}) for c in columns],
                                lengths)
        gathered.nbest = nbest
        return gathered

    @classmethod
    def gathered(cls, columns: Sequence[Column], counts: np.ndarray, flat: Sequence[np.ndarray],
                 lengths: Sequence[np.ndarray | None]) -> "Features":
        """From each column's values of every hypothesis (``flat[k]``: ``[hypotheses]``, utterance by utterance,
        ``counts[u]`` hypotheses each) and the lengths its penalty divides by (None: it has none)."""
        width = max(int(counts.max(initial=0)), 1)
        valid = np.arange(width)[None, :] < counts[:, None]
        values = np.zeros((len(counts), width, len(columns)))
        for k, column in enumerate(columns):
            values[..., k][valid] = column.penalise(flat[k], lengths[k])
        return cls([c.name for c in columns], values, valid, counts)

    def utterance(self, u: int) -> str:
        """Where utterance ``u`` is: its file and line, else its list and id (its index where no list is known)."""
        if self.nbest is None:
            return f"utterance {u + 1}"
        utt = self.nbest.utterances[u]
        where = utt.origin or self.nbest.source
        return f"{where}: utterance {utt.id!r}" if where else f"utterance {utt.id!r}"

    def rows(self, rows: np.ndarray) -> "Features":
        """The utterances ``rows`` only."""
        nbest = self.nbest and self.nbest.with_utterances([self.nbest.utterances[r] for r in rows])
        return Features(self.names, self.values[rows], self.valid[rows], self.hyps_per_utterance[rows], nbest)


def needs_words(columns: Sequence[Column]) -> bool:
    """Whether combining ``columns`` needs each hypothesis' word count (the word bonus, or a length penalty)."""
    return any(c.name == WORD_COUNT_COLUMN or c.penalty != "none" for c in columns)


def _words(nbest: NBest) -> np.ndarray:
    """The word count of every hypothesis, in ``nbest.texts()`` order."""
    return np.fromiter(map(len, map(str.split, nbest.texts())), dtype=float, count=nbest.num_hypotheses)


def _flat(nbest: NBest, name: str, words: np.ndarray | None, flat_columns: Mapping[str, np.ndarray]) -> np.ndarray:
    """Column ``name`` of every hypothesis: the word count, the given flat array, or the hypotheses' scores. The
    word count's name is reserved: an input or LM column of that name is refused, not shadowed."""
    if name == WORD_COUNT_COLUMN:
        holder = next((u for u in nbest for h in u.hyps if name in h.scores), None)
        if holder is not None or name in flat_columns:
            what, fix = (f"{holder.origin or nbest.source}: input score column", "rename it in the file") \
                if holder is not None else (f"{nbest.source}: scorer", "give the scorer another name")
            raise ConfigError(f"{what} {name!r} clashes with the built-in word count {name!r} (its weight is the "
                              f"word bonus); {fix}")
        return words
    if name in flat_columns:
        values = np.asarray(flat_columns[name], dtype=float)
        if values.shape != (nbest.num_hypotheses,):
            raise ConfigError(f"column {name!r} has {values.size} values for {nbest.num_hypotheses} hypotheses")
        return values
    try:
        return nbest.column_array(name)
    except KeyError:
        utt, k, hyp = next((u, k, h) for u in nbest for k, h in enumerate(u.hyps, 1) if name not in h.scores)
        where = utt.origin or nbest.source
        raise ConfigError(f"{where}: utterance {utt.id!r} (hypothesis {k}) has no score column {name!r}; it has "
                          f"{', '.join(hyp.scores) or 'none'} (LM columns come from scorer=...)") from None


def totals(features: Features, weights: np.ndarray) -> np.ndarray:
    """Totals ``[..., U, N]`` for weight rows ``[..., K-1]`` (the base column has weight 1); invalid slots are −inf.

    A weight of 0 means the column is absent (0 · −inf counts as 0, not NaN). A −inf or NaN value (an impossible
    hypothesis; readers refuse NaN, an LM may still give one) under a non-zero weight makes the total −inf: it
    sorts last. Finite values are summed without overflowing on the way, so only a total beyond the float range
    is infinite: −inf sorts last, +inf (as from a +inf value) is refused. No total is ever NaN."""
    weights = np.asarray(weights, dtype=float)
    full = np.concatenate([np.ones(weights.shape[:-1] + (1,)), weights], axis=-1)
    values = features.values
    if np.isfinite(values).all():
        sums, overflowed = _weighted_sums(values, full)
        out = np.where(features.valid, sums, -np.inf)
        return _refuse_positive_infinity(features, full, out) if overflowed else out
    used = (full != 0) * 1.0
    impossible = np.einsum("unk,...k->...un", (np.isneginf(values) | np.isnan(values)) * 1.0, used) > 0
    too_large = np.einsum("unk,...k->...un", np.isposinf(values) * 1.0, used) > 0
    sums, _ = _weighted_sums(np.where(np.isfinite(values), values, 0.0), full)
    out = np.where(features.valid & ~impossible, np.where(too_large, np.inf, sums), -np.inf)
    return _refuse_positive_infinity(features, full, out)


def _weighted_sums(values: np.ndarray, full: np.ndarray) -> tuple[np.ndarray, bool]:
    """Σ_k w_k · v_k of finite values, and whether a sum overflowed. A sum that overflowed on the way is summed again
    at a power-of-two scale where no partial sum can (2**shift > Σ|w|), so that only a total beyond the float range
    is ±inf; every other total is left as it is, so each hypothesis' total depends on its own values alone."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.einsum("unk,...k->...un", values, full)
        over = ~np.isfinite(out)
        if not over.any():
            return out, False
        shift = np.frexp(np.abs(full).sum(-1))[1]
        scaled = np.ldexp(np.einsum("unk,...k->...un", values, np.ldexp(full, -shift[..., None])),
                          shift[..., None, None])
        return np.where(over, scaled, out), True


def _refuse_positive_infinity(features: Features, full: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out``, unless a total is +inf: no file can hold it and it would outrank every finite one."""
    if not np.isposinf(out).any():
        return out
    *row, u, n = np.argwhere(np.isposinf(out))[0]
    weights = full[tuple(row)]
    with np.errstate(over="ignore", invalid="ignore"):
        k = int(np.nanargmax(np.abs(weights * features.values[u, n])))  # the largest term (0 · inf is no term)
    raise ConfigError(f"{features.utterance(u)}: the total of hypothesis {n + 1} is +inf: column "
                      f"{features.names[k]!r} is {features.values[u, n, k]:g} under weight {weights[k]:g}, too large "
                      "to combine; rescale it")


def best_ranks(features: Features, weights: np.ndarray) -> np.ndarray:
    """The 0-based rank of the highest total per utterance (ties → the earlier, i.e. the toolkit's order)."""
    return totals(features, weights).argmax(-1)
