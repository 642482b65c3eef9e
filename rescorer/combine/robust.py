"""The robust weight rule (``search=robust``): of the settings whose dev metric is not significantly worse than
the best one's (paired bootstrap over dev utterances), the one with the smallest weights (L2 norm).

Argmax tuning on a few hundred dev utterances chases noise; this rule keeps a weight only as large as the dev
set can justify, the way the one-standard-error rule picks the simplest model within the best one's error.
"""
from __future__ import annotations

import time
from typing import Sequence

import numpy as np

from ..metrics import NBestStats
from .interpolate import Column, Features, best_ranks
from .search import BLOCK_CELLS, SearchResult, fast_search, pick


def utterance_stats(features: Features, stats: NBestStats, settings: np.ndarray) -> np.ndarray:
    """Each setting's chosen hypothesis' statistics per dev utterance: ``[settings, utterances, stats]``."""
    utterances = np.arange(features.values.shape[0])
    block = max(1, BLOCK_CELLS // max(features.values.shape[0] * features.values.shape[1], 1))
    return np.concatenate([stats.stats[utterances[None, :], best_ranks(features, settings[i : i + block])]
                           for i in range(0, len(settings), block)])


def robust_search(features: Features, stats: NBestStats, columns: Sequence[Column], samples: int = 200,
                  level: float = 0.95, seed: int = 0, restarts: int = 4) -> SearchResult:
    """The fast search's settings, then the smallest weights within the best setting's bootstrap interval."""
    start = time.perf_counter()
    tried = fast_search(features, stats, columns, restarts=restarts, seed=seed)
    settings, values, metric = tried.tried, tried.values, stats.metric
    best = pick(settings, values, metric.higher_is_better)
    per = utterance_stats(features, stats, settings)                                   # [G, U, S]
    draws = np.random.default_rng(seed).integers(0, per.shape[1], size=(samples, per.shape[1]))
    counts = np.stack([np.bincount(d, minlength=per.shape[1]) for d in draws])          # [B, U]
    resampled = metric.from_stats(np.einsum("bu,gus->gbs", counts, per))                # [G, B]
    worse = resampled - resampled[best] if not metric.higher_is_better else resampled[best] - resampled
    tail = (1 - level) / 2
    kept = np.flatnonzero(np.quantile(worse, tail, axis=1) <= 0)                        # not significantly worse
    norms = np.round(np.linalg.norm(settings[kept], axis=1), 10)
    order = np.lexsort((values[kept] * (-1 if metric.higher_is_better else 1), norms))
    chosen = int(kept[order[0]])
    low, high = np.quantile(resampled[chosen], [tail, 1 - tail])
    weights = {c.name: float(settings[chosen, k]) for k, c in enumerate(columns)}
    return SearchResult(weights, float(values[chosen]), "robust", len(settings), time.perf_counter() - start,
                        settings, values, dev_ci=(float(low), float(high)))
