"""Re-tuning the toolkit's own weights: input columns (ESPnet's ``lm`` and ``ctc``, a Moses feature, the word count
as a length bonus) searched beside the LM columns, without decoding again.

A re-tuned column ``c`` is added to the base as ``Δ·c``: the toolkit's weight ``w`` of ``c`` becomes ``w + Δ``. The
toolkit's weights are not in the lists, so they are recovered from the data: the base is fitted as a weighted sum
of the named columns within each utterance (least squares on values centred per utterance, since only differences
within an N-best list change a ranking). Each column is then searched over ``Δ ∈ [−|w|, +|w|]`` in steps of
``|w|/10`` — from switching the component off to doubling it — and ``Δ = 0`` keeps the toolkit's choice; a column
the base does not contain (``w ≈ 0``, e.g. ``words``) gets a range that can move the base by half its spread.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import ConfigError
from ..types import NBest
from .interpolate import WORD_COUNT_COLUMN, Column, Features, best_ranks

ALL = "all"        # every input score column but the base
STEPS = 10         # grid steps on each side of the toolkit's weight
ABSENT = 1e-6      # |w| · spread(column) / spread(base) below this: the base does not contain the column


@dataclass(frozen=True)
class ToolkitWeights:
    """The base as a weighted sum of input columns: the weight of each (``{name: w}``) and how much of the base's
    variation within an utterance the sum explains (R², 1 = exactly)."""

    weights: dict[str, float]
    r2: float

    def text(self, base: str) -> str:
        terms = " ".join(f"{'−' if w < 0 else '+'} {abs(w):.3g}·{name}" for name, w in self.weights.items())
        return f"{base} ≈ {terms.lstrip('+ ')} within each utterance (R² {self.r2:.3f})"


def retune_names(nbest: NBest, base: Column, requested: Sequence[str] | str, lm_columns: Sequence[str]) -> list[str]:
    """The input columns to re-tune: ``requested`` checked against the list's columns (``all``: every input column
    but the base), never the base or an LM column."""
    if isinstance(requested, str):
        requested = requested if requested == ALL else [requested]
    if not (requested == ALL or isinstance(requested, (list, tuple)) and all(isinstance(n, str) for n in requested)):
        raise ConfigError(f"task.retune must be input column names (e.g. [lm, ctc, words]), {ALL}, auto or null, "
                          f"not {requested!r}")
    inputs = [c for c in nbest.columns if c != base.name and c not in lm_columns]
    names = inputs if requested == ALL else list(requested)
    allowed = [*inputs, WORD_COUNT_COLUMN]
    for name in names:
        if name == base.name:
            raise ConfigError(f"task.retune: {name!r} is the base column (weight 1); re-tune its parts instead "
                              f"(choose from {', '.join(allowed)})")
        if name in lm_columns:
            raise ConfigError(f"task.retune: {name!r} is an LM column, tuned already; re-tune input columns "
                              f"(choose from {', '.join(allowed)})")
        if name not in allowed:
            raise ConfigError(f"task.retune: no input column {name!r} in {nbest.source or 'the tuning set'} "
                              f"(choose from {', '.join(allowed)}, or {ALL})")
    return list(dict.fromkeys(names))


def toolkit_weights(nbest: NBest, base: str, names: Sequence[str]) -> ToolkitWeights:
    """Least-squares weights of ``names`` that best rebuild ``base`` within each utterance (finite values only)."""
    owners = np.repeat(np.arange(len(nbest)), [len(u.hyps) for u in nbest])
    y = _centred(nbest.column_array(base), owners)
    x = np.stack([_centred(_values(nbest, n), owners) for n in names], axis=1) if names else np.zeros((len(y), 0))
    finite = np.isfinite(y) & np.isfinite(x).all(axis=1)
    y, x = y[finite], x[finite]
    if not len(y) or not names:
        return ToolkitWeights({n: 0.0 for n in names}, 0.0)
    w, *_ = np.linalg.lstsq(x, y, rcond=None)
    total = float(np.sum(y ** 2))
    r2 = 1.0 - float(np.sum((y - x @ w) ** 2)) / total if total > 0 else 0.0
    return ToolkitWeights({n: float(v) for n, v in zip(names, w)}, r2)


def retune_columns(nbest: NBest, base: Column, names: Sequence[str]) -> tuple[list[Column], ToolkitWeights]:
    """A tuned column per name over a range around its weight in the base (see the module's docstring), and the
    weights of every input column in the base (all fitted together: a part left out would bias the others)."""
    fitted, spreads = _fit(nbest, base, names)
    columns = []
    for name in names:
        spread, weight = spreads[name], abs(fitted.weights[name])
        if spread == 0 or spreads[base.name] == 0:
            half = 1.0
        elif weight * spread / spreads[base.name] < ABSENT:
            half = 0.5 * spreads[base.name] / spread
        else:
            half = weight
        half = _two_digits(half)
        columns.append(Column(name, penalty="none", range=(-half, half), step=half / STEPS))
    return columns, fitted


def base_parts(nbest: NBest, base: Column, lm_columns: Sequence[str]) -> list[str]:
    """The input columns the base is made of, the toolkit's own: those whose fitted weight moves the base by at least
    :data:`ABSENT` of its spread within an utterance. A column the toolkit did not weigh is none of them: an LM
    column a scoring run added to the lists, a total a re-ranking wrote, a feature the decoder only reported."""
    names = [c for c in retune_names(nbest, base, ALL, lm_columns) if _numeric(nbest, c)]
    fitted, spreads = _fit(nbest, base, names)
    floor = ABSENT * spreads[base.name]
    return [n for n in names if floor and abs(fitted.weights[n]) * spreads[n] >= floor]


def _fit(nbest: NBest, base: Column, names: Sequence[str]) -> tuple[ToolkitWeights, dict[str, float]]:
    """The weights of every input column in the base (all fitted together: a part left out would bias the others),
    and the spread within an utterance of the base and of each of ``names``."""
    parts = [c for c in nbest.columns if c != base.name and (c in names or _numeric(nbest, c))]
    owners = np.repeat(np.arange(len(nbest)), [len(u.hyps) for u in nbest])
    with np.errstate(over="ignore", invalid="ignore"):  # scores near the float limit: an infinite spread, no warning
        fitted = toolkit_weights(nbest, base.name, [*parts, *(n for n in names if n not in parts)])
        spreads = {name: _spread(_values(nbest, name), owners) for name in [base.name, *names]}
    return fitted, spreads


def _numeric(nbest: NBest, name: str) -> bool:
    """Whether every hypothesis has a value of column ``name`` (a part the base may be made of)."""
    try:
        nbest.column_array(name)
    except (KeyError, TypeError, ValueError):
        return False
    return True


def _values(nbest: NBest, name: str) -> np.ndarray:
    if name == WORD_COUNT_COLUMN:
        return np.array([len(h.words) for u in nbest for h in u.hyps], dtype=float)
    return nbest.column_array(name)


def _centred(values: np.ndarray, owners: np.ndarray) -> np.ndarray:
    """``values`` minus the mean of their utterance (non-finite values stay non-finite)."""
    finite = np.where(np.isfinite(values), values, 0.0)
    counts = np.maximum(np.bincount(owners, weights=np.isfinite(values)), 1)
    return values - (np.bincount(owners, weights=finite) / counts)[owners]


def _spread(values: np.ndarray, owners: np.ndarray) -> float:
    """The typical difference of a column within an utterance (root mean square of the centred values)."""
    centred = _centred(values, owners)
    centred = centred[np.isfinite(centred)]
    return float(np.sqrt(np.mean(centred ** 2))) if len(centred) else 0.0


def _two_digits(x: float) -> float:
    """``x`` rounded to two significant digits, so that ranges and steps read well in the report."""
    if x <= 0 or not math.isfinite(x):
        return 1.0
    return round(x, 1 - int(math.floor(math.log10(x))))


def with_retuned(columns: Sequence[Column], dev: NBest, base: Column, requested: Sequence[str] | str | None,
                 lm_columns: Sequence[str]) -> tuple[list[Column], list[str]]:
    """``columns`` plus a re-tuned column for each ``requested`` input column not given already, and a note with
    the toolkit's weights as fitted on ``dev`` and the ranges searched (with nothing requested: a note naming the
    input columns that could be re-tuned)."""
    given = {c.name for c in columns}
    if not requested:
        others = [c for c in base_parts(dev, base, lm_columns) if c not in given]
        shown = ", ".join(others[:6]) + (f" and {len(others) - 6} more" if len(others) > 6 else "")
        return list(columns), [f"the lists also carry the toolkit's own column(s) {shown}: task.retune=[{others[-1]}] "
                               "(or all) re-tunes their weights beside the LM's"] if others else []
    names = [n for n in retune_names(dev, base, requested, lm_columns) if n not in given]
    added, fitted = retune_columns(dev, base, names)
    if not added:
        return list(columns), []
    ranges = ", ".join(f"{c.name} {c.range[0]:g}…{c.range[1]:+g}" for c in added)
    return [*columns, *added], [f"re-tuning the toolkit's own weights: {fitted.text(base.name)}; each re-tuned "
                                f"column's weight is a change to its weight in {base.name} ({ranges})"]


def alone_ranks(features: Features, columns: Sequence[Column], weights: np.ndarray, kept: Sequence[str]) -> np.ndarray:
    """The 1-best ranks under ``weights`` with every column but ``kept`` switched off (weight 0)."""
    only = np.array([w if c.name in kept else 0.0 for c, w in zip(columns, weights)])
    return best_ranks(features, only)
