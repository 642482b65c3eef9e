"""Weight search on a dev set: the paper-faithful grid and the fast search on sufficient statistics.

``grid_search`` re-ranks, then scores the chosen strings with jiwer / sacrebleu for every setting, as the
paper's scripts do. ``fast_search`` scores settings in blocks from per-hypothesis statistics (a gather and a
sum): exhaustively over the grid for up to two weights, by coordinate ascent with restarts beyond that.
Both pick the best dev metric; the grid breaks ties towards the largest weights (as the paper's loops did), the
fast search towards the smallest change from the base.
"""
from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..errors import ConfigError
from ..metrics import NBestStats
from ..types import NBest
from .interpolate import Column, Features, best_ranks

BLOCK_CELLS = 4_000_000  # settings × utterances × N evaluated at once
MAX_SETTINGS = 10_000_000  # a grid larger than this is refused before it is built


@dataclass
class SearchResult:
    """The chosen weights, their dev metric, and every setting tried (for λ plots)."""

    weights: dict[str, float]
    dev: float
    method: str
    evaluated: int
    seconds: float
    tried: np.ndarray = field(repr=False)   # [settings, weights]
    values: np.ndarray = field(repr=False)  # [settings] dev metric of each
    dev_ci: tuple[float, float] | None = None  # bootstrap interval of the chosen setting's dev metric (robust)


def weight_grid(columns: Sequence[Column]) -> np.ndarray:
    """Every combination of the columns' grids: ``[settings, len(columns)]``."""
    if not columns:
        return np.zeros((1, 0))
    sizes = [c.size for c in columns]
    if math.prod(sizes) > MAX_SETTINGS:
        shown = " × ".join(f"{c.name} {c.size:,}" for c in columns)
        raise ConfigError(f"a grid of {shown} = {math.prod(sizes):,} settings is too many to "
                          f"try (at most {MAX_SETTINGS:,}): use wider steps, narrower ranges or search=fast")
    return np.array(list(itertools.product(*(c.grid for c in columns))), dtype=float)


def pick(settings: np.ndarray, values: np.ndarray, higher_is_better: bool, ties: str = "smallest") -> int:
    """Index of the best value; among equal values (1e-12) the smallest change from the base (the smallest weights,
    L2 norm, then left to right: ``ties="smallest"``) or, as the paper's loops did, the largest weights compared
    left to right (``ties="largest"``)."""
    target = values.max() if higher_is_better else values.min()
    tied = np.flatnonzero(np.abs(values - target) <= 1e-12)
    if not settings.shape[1]:
        return int(tied[0])
    if ties == "largest":
        order = np.lexsort(tuple(-settings[tied, k] for k in reversed(range(settings.shape[1]))))
    else:
        keys = tuple(np.abs(settings[tied, k]) for k in reversed(range(settings.shape[1])))
        order = np.lexsort((*keys, np.round(np.linalg.norm(settings[tied], axis=1), 10)))
    return int(tied[order[0]])


def settings_metric(features: Features, stats: NBestStats, settings: np.ndarray) -> np.ndarray:
    """Dev metric of each weight setting, from sufficient statistics, in memory-bounded blocks."""
    cells = features.values.shape[0] * features.values.shape[1]
    block = max(1, BLOCK_CELLS // max(cells, 1))
    utterances = np.arange(features.values.shape[0])
    out = np.empty(len(settings))
    for start in range(0, len(settings), block):
        ranks = best_ranks(features, settings[start : start + block])            # [g, U]
        summed = stats.stats[utterances[None, :], ranks].sum(1)                  # [g, S]
        out[start : start + block] = stats.metric.from_stats(summed)
    return out


def _result(columns, settings, values, method, higher, start, ties: str = "smallest") -> SearchResult:
    best = pick(settings, values, higher, ties)
    weights = {c.name: float(settings[best, k]) for k, c in enumerate(columns)}
    return SearchResult(weights, float(values[best]), method, len(settings), time.perf_counter() - start,
                        settings, values)


def grid_search(nbest: NBest, features: Features, stats: NBestStats, columns: Sequence[Column]) -> SearchResult:
    """Paper-faithful: every grid setting re-ranks the list and the metric library scores the chosen strings."""
    start = time.perf_counter()
    settings = weight_grid(columns)
    refs = nbest.refs()
    values = np.array([stats.metric.corpus(refs, nbest.select(best_ranks(features, w))) for w in settings])
    return _result(columns, settings, values, "grid", stats.metric.higher_is_better, start, ties="largest")


def fast_search(features: Features, stats: NBestStats, columns: Sequence[Column], restarts: int = 4,
                seed: int = 0, exhaustive_up_to: int = 2) -> SearchResult:
    """Exhaustive on the grid for ≤ ``exhaustive_up_to`` weights, else coordinate ascent over the grid axes."""
    start = time.perf_counter()
    higher = stats.metric.higher_is_better
    if len(columns) <= exhaustive_up_to:
        settings = weight_grid(columns)
        return _result(columns, settings, settings_metric(features, stats, settings), "fast", higher, start)
    rng = np.random.default_rng(seed)
    grids = [c.grid for c in columns]
    tried: dict[tuple[float, ...], float] = {}
    for restart in range(restarts):
        point = np.array([g[0] if restart == 0 else rng.choice(g) for g in grids])
        improved = True
        while improved:
            improved = False
            for k, grid in enumerate(grids):
                candidates = np.repeat(point[None, :], len(grid), axis=0)
                candidates[:, k] = grid
                values = settings_metric(features, stats, candidates)
                tried.update({tuple(c): float(v) for c, v in zip(candidates, values)})
                best = candidates[pick(candidates, values, higher)]
                if not np.array_equal(best, point):
                    point, improved = best, True
    settings = np.array(list(tried))
    return _result(columns, settings, np.array(list(tried.values())), "fast", higher, start)
