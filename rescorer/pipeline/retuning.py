"""Re-tuning the toolkit's own weights within a rescoring run: which input columns are searched beside the LM
columns — those named, ``all``, or by default (``auto``) all of them if that holds on the tuning set's own random
half-splits with the LMs still weighed — and what the re-tuned columns do by themselves."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Sequence

import numpy as np

from ..combine import Column, Search
from ..combine.heldout import half_splits
from ..combine.interpolate import best_ranks
from ..combine.retune import alone_ranks, base_parts, with_retuned
from ..log import info
from ..metrics import Metric
from ..types import NBest
from .rerank import ScoredSet

AUTO = "auto"
AUTO_MIN_UTTERANCES = 500  # fewer: halves too small to tell re-tuning from noise, so auto does not re-tune
AUTO_SPLITS = 20           # half-splits of the tuning set that auto compares on
AUTO_WINS = 15             # re-tuning must do better on the held half of at least this many of them


@dataclass(frozen=True)
class Retuning:
    """The tuned columns (LM and re-tuned input columns), which of them are re-tuned input columns, whether that is
    still to be decided on half-splits (``auto``), and what to tell the user."""

    columns: list[Column]
    retuned: list[str]
    auto: bool
    notes: list[str]


def plan(columns: Sequence[Column], dev: NBest, base: Column, retune: Sequence[str] | str | None,
         lm_columns: Sequence[str]) -> Retuning:
    """The columns to tune: ``columns`` plus the input columns ``retune`` asks for (``auto``: those the base is made
    of, :func:`~rescorer.combine.retune.base_parts`, to be confirmed by :func:`decided` when the tuning set is
    large enough; else none)."""
    auto = retune == AUTO
    if auto and len(dev) < AUTO_MIN_UTTERANCES:
        _, notes = with_retuned(columns, dev, base, None, lm_columns)
        size = (f"task.retune=auto: the tuning set has {len(dev):,} utterances, too few (< {AUTO_MIN_UTTERANCES}) to "
                "judge re-tuning the toolkit's weights on its halves, so they are kept; ")
        return Retuning(list(columns), [], False, [size + n for n in notes])
    tuned, notes = with_retuned(columns, dev, base, base_parts(dev, base, lm_columns) if auto else retune, lm_columns)
    given = {c.name for c in columns}
    retuned = [c.name for c in tuned if c.name not in given]
    return Retuning(tuned, retuned, auto and bool(retuned), notes)


def decided(retuning: Retuning, prepared: Mapping[str, ScoredSet], dev: str, metric: Metric,
            seed: int) -> tuple[Retuning, Mapping[str, ScoredSet]]:
    """For ``auto``: keep the re-tuned columns if, on :data:`AUTO_SPLITS` seeded half-splits of the tuning set
    ``dev``, tuning with them does better on the held half than tuning without them at least :data:`AUTO_WINS`
    times, and the columns asked for (the LMs) keep a weight beside them in at least as many of those fits (else the
    gain is the toolkit's weights fitted to the tuning set alone); else drop them (from the plan and from every
    set's features). A note says which and why."""
    if not retuning.auto:
        return retuning, prepared
    scored = prepared[dev]
    info(f"rescorer: task.retune=auto: tuning with and without {', '.join(retuning.retuned)} on {AUTO_SPLITS} random "
         f"half-splits of {dev} to see whether re-tuning them holds")
    fixed = [replace(c, range=(0.0, 0.0), step=1.0) if c.name in retuning.retuned else c for c in retuning.columns]
    fast = {"fast": Search("fast")}
    fits = [half_splits(scored.features, scored.stats, columns, fast, AUTO_SPLITS, seed)["fast"]
            for columns in (retuning.columns, fixed)]
    held = [np.array(fit["deltas"]) for fit in fits]
    better = held[0] > held[1] + 1e-12 if metric.higher_is_better else held[0] < held[1] - 1e-12
    wins = int(better.sum())
    own = [c.name for c in retuning.columns if c.name not in retuning.retuned]  # the columns asked for (the LMs)
    weighed = sum(any(w[name] != 0 for name in own) for w in fits[0]["weights"]) if own else AUTO_SPLITS
    what = (f"task.retune=auto: tuning {', '.join(retuning.retuned)} beside the LM columns did better on the held "
            f"half of {wins} of {AUTO_SPLITS} random half-splits of the tuning set (mean change {held[0].mean():+.3f} "
            f"against {held[1].mean():+.3f} without)")
    if wins >= AUTO_WINS and weighed >= AUTO_WINS:
        return replace(retuning, auto=False, notes=[f"{what}: re-tuned", *retuning.notes]), prepared
    if wins < AUTO_WINS:
        note = f"{what}: not re-tuned (at least {AUTO_WINS} needed; task.retune=all re-tunes them anyway)"
    else:
        note = (f"{what}, but {', '.join(own)} kept a weight in only {weighed} of those fits: the gain would be the "
                f"toolkit's own weights fitted to this set, which carries over least to other data: not re-tuned "
                f"(at least {AUTO_WINS} needed; task.retune=all re-tunes them anyway)")
    kept = [k for k, c in enumerate(retuning.columns) if c.name not in retuning.retuned]
    return (Retuning([retuning.columns[k] for k in kept], [], False, [note]),
            {name: _with_columns(s, kept) for name, s in prepared.items()})


def _with_columns(scored: ScoredSet, kept: Sequence[int]) -> ScoredSet:
    """``scored`` with only the tuned columns ``kept`` (indices among the tuned columns; the base stays)."""
    index = [0, *(k + 1 for k in kept)]
    features = replace(scored.features, names=[scored.features.names[k] for k in index],
                       values=scored.features.values[..., index])
    return replace(scored, features=features)


def retuned_alone(prepared: Mapping[str, ScoredSet], columns: Sequence[Column], weights: Mapping[str, float],
                  retuned: Sequence[str], metric: Metric, dev: str) -> list[str]:
    """What the re-tuned input columns do by themselves (every LM weight 0) on each judged set, beside the whole
    change; on the tuning set, whether they alone explain most of the gain."""
    if not retuned:
        return []
    full = np.array([weights[c.name] for c in columns])
    parts, share = [], None
    for name, scored in prepared.items():
        if scored.stats is None:
            continue
        before, after, alone = (metric.scale * scored.stats.score(ranks) for ranks in (
            scored.stats.baseline_ranks(), best_ranks(scored.features, full),
            alone_ranks(scored.features, columns, full, retuned)))
        parts.append(f"{name} {before:.2f} → {alone:.2f} (with the LMs → {after:.2f})")
        if name == dev and after != before:
            share = (alone - before) / (after - before)
    note = (f"the re-tuned column(s) {', '.join(retuned)} alone, every LM weight 0: {metric.name.upper()} "
            + "; ".join(parts))
    if share is not None and share > 0.5:
        note += (f". On {dev} they alone give {share:.0%} of the change: most of the gain is the toolkit's own "
                 "weights re-tuned, not the LM")
    return [note] if parts else []
