"""Does a tuning rule generalise? Split the dev set into random halves, tune on one, measure on the other."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..metrics import NBestStats
from .interpolate import Column, Features, best_ranks
from .rules import Search, search_weights


def subset(features: Features, stats: NBestStats, rows: np.ndarray) -> tuple[Features, NBestStats]:
    """The utterances ``rows`` of a scored set."""
    return (features.rows(rows),
            NBestStats(stats.metric, stats.stats[rows], stats.lengths[rows]))


def half_splits(features: Features, stats: NBestStats, columns: Sequence[Column],
                rules: Mapping[str, Search], splits: int = 20, seed: int = 0) -> dict[str, Any]:
    """For ``splits`` seeded random halves: tune with each rule (``{name: Search}``) on one half, apply to the
    other; per rule the held-half change (rescored − baseline metric, reported scale) and the weights chosen."""
    rng = np.random.default_rng(seed)
    metric = stats.metric
    out: dict[str, Any] = {name: {"deltas": [], "weights": []} for name in rules}
    for _ in range(splits):
        order = rng.permutation(len(stats.lengths))
        tune_rows, held_rows = np.sort(order[: len(order) // 2]), np.sort(order[len(order) // 2 :])
        tune_f, tune_s = subset(features, stats, tune_rows)
        held_f, held_s = subset(features, stats, held_rows)
        for name, options in rules.items():
            result = search_weights(options, None, tune_f, tune_s, columns)
            weights = np.array([result.weights[c.name] for c in columns])
            delta = held_s.score(best_ranks(held_f, weights)) - held_s.score(held_s.baseline_ranks())
            out[name]["deltas"].append(metric.scale * delta)
            out[name]["weights"].append(result.weights)
    for entry in out.values():
        entry["mean"], entry["std"] = float(np.mean(entry["deltas"])), float(np.std(entry["deltas"]))
    return out
