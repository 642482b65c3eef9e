"""The search rules by name (``grid``, ``fast``, ``robust``): each rule's options, checked, and the one entry point."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..errors import UnknownNameError, check_known
from ..metrics import NBestStats
from ..options import RESAMPLES, SEED, Option, checked
from ..types import NBest
from .interpolate import Column, Features
from .robust import robust_search
from .search import SearchResult, fast_search, grid_search

RESTARTS = Option("integer", low=1, high=10_000)
SEARCHES = {  # each search rule's options: what ``search.<key>`` may hold
    "grid": {},
    "fast": {"restarts": RESTARTS, "seed": SEED, "exhaustive_up_to": Option("integer", low=0, high=10_000_000)},
    "robust": {"samples": RESAMPLES, "level": Option("number", low=0, high=1, strict=True), "seed": SEED,
               "restarts": RESTARTS},
}


def search_options(method: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options of search rule ``method``, each checked: an unknown rule or key, or a value of the wrong kind or
    out of range, is one :class:`ConfigError` naming it."""
    if not isinstance(method, str) or method not in SEARCHES:
        raise UnknownNameError("search", str(method), SEARCHES)
    check_known(f"search={method} key", options, SEARCHES[method])
    return checked("search.", options, SEARCHES[method])


def search_weights(method: str, nbest: NBest, features: Features, stats: NBestStats, columns: Sequence[Column],
                   **options) -> SearchResult:
    """The best weights on the dev set by search rule ``method`` (``grid``, ``fast`` or ``robust``) and its
    ``options`` (checked first)."""
    options = search_options(method, options)
    if method == "grid":
        return grid_search(nbest, features, stats, columns)
    if method == "fast":
        return fast_search(features, stats, columns, **options)
    return robust_search(features, stats, columns, **options)
