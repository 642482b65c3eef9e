"""Putting the combined columns on matching scales before tuning, and saying what tuning could not tell.

A per-token base score (fairseq's length-normalised ``H``, HyPoradise's acoustic scores) beside a sentence-sum LM
column would let the LM's units alone decide: every weight above the smallest wins outright. So an LM column whose
penalty is ``auto`` is divided by its token count when the base is per token, and summed otherwise."""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np

from .interpolate import Column
from .search import SearchResult
from ..io.formats import facts
from ..types import NBest

MIN_EVIDENCE = 20        # hypotheses (of ≥ 2 lengths) needed to judge a column's scale from the data
SUM_CORRELATION = 0.5    # |score| correlating at least this much with the length is a sum over tokens


def base_per_token(nbest: NBest, base: Column) -> tuple[bool, str]:
    """Whether the base column is a per-token score, and why: its magnitude does (not) grow with the hypothesis
    length in the data, or, with too little data to tell, what its format writes."""
    if base.penalty in ("tokens", "gnmt"):
        return True, f"the base column is divided by its length (penalty {base.penalty})"
    try:
        values = np.abs(nbest.column_array(base.name))
    except KeyError:
        return False, "the base column is not in every hypothesis"
    lengths = np.array([len(h.words) for u in nbest for h in u.hyps], dtype=float)
    finite = np.isfinite(values)
    values, lengths = values[finite], lengths[finite]
    if len(values) >= MIN_EVIDENCE and np.ptp(lengths) > 0 and np.ptp(values) > 0:
        r = float(np.corrcoef(values, lengths)[0, 1])
        grows = "grows" if r >= SUM_CORRELATION else "does not grow"
        return r < SUM_CORRELATION, f"the magnitude of {base.name} {grows} with the hypothesis length (r = {r:.2f})"
    if facts(nbest.fmt).per_token:
        return True, facts(nbest.fmt).per_token
    return False, f"{nbest.fmt} scores are sums over the hypothesis"


def match_scales(columns: Sequence[Column], base: Column, dev: NBest, lm_columns: Sequence[str]) -> tuple[list[Column], list[str]]:
    """``columns`` with every ``auto`` penalty decided (``tokens`` for LM columns beside a per-token base, else
    ``none``), and a note saying so when a column was divided."""
    per_token, why = base_per_token(dev, base)
    decided = [replace(c, penalty=("tokens" if per_token and c.name in lm_columns else "none"))
               if c.penalty == "auto" else c for c in columns]
    divided = [c.name for c, old in zip(decided, columns) if old.penalty == "auto" and c.penalty == "tokens"]
    notes = [f"the base column {base.name} is per token ({why}): LM column(s) {', '.join(divided)} divided by their "
             f"token counts to match (task.columns.<name>.penalty=none keeps sums)"] if divided else []
    return decided, notes


def search_warnings(result: SearchResult, columns: Sequence[Column]) -> list[str]:
    """What the tuned weights cannot show by themselves: a weight on the edge of its range (the best may lie
    beyond), or a dev set on which every setting scored the same (nothing to tune on: each weight keeps the
    smallest value of its range)."""
    if len(result.values) > 1 and np.ptp(result.values) <= 1e-12:
        kept = ", ".join(f"{name}={weight:g}" for name, weight in result.weights.items())
        return ["every weight setting gives the same dev result: the dev set cannot inform the weights, so each "
                f"keeps the smallest its range allows ({kept})"]
    warnings = []
    for c in columns:
        weight, (lo, hi) = result.weights[c.name], c.range
        edge = hi if np.isclose(weight, hi) and hi != 0 else lo if np.isclose(weight, lo) and lo != 0 else None
        if edge is not None and lo != hi:
            wider = [lo, 2 * hi] if edge == hi else [2 * lo if lo < 0 else 0, hi]
            warnings.append(f"the weight of {c.name} ({weight:g}) is on the edge of its range {[lo, hi]}: the best "
                            f"may lie beyond; try task.columns.{c.name}.range={wider}")
    return warnings
