"""The search rules by name (``grid``, ``fast``, ``robust``): each rule's options, checked, and the one entry point."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..errors import ConfigError, UnknownNameError, check_known, short_repr
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


@dataclass(frozen=True)
class Search:
    """A weight search: its rule (``fast``, ``grid``, ``robust``) and the rule's options, checked once where it comes
    in (:meth:`of`)."""

    method: str = "fast"
    options: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, value: "Search | str | Mapping[str, Any] | None") -> "Search":
        """``value`` as a Search: a rule's name, ``{name: RULE, …options}`` (None: fast), or a Search as it is."""
        if isinstance(value, Search):
            return value
        if isinstance(value, str) or value is None:
            value = {"name": value or "fast"}
        if not isinstance(value, Mapping):
            raise ConfigError(f"search must be fast, grid, robust or a mapping {{name: fast|grid|robust, …options}}, "
                              f"not {short_repr(value)}")
        options = dict(value)
        method = options.pop("name", "fast")
        return cls(method, search_options(method, options))


def search_options(method: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options of search rule ``method``, each checked: an unknown rule or key, or a value of the wrong kind or
    out of range, is one :class:`ConfigError` naming it."""
    if not isinstance(method, str) or method not in SEARCHES:
        raise UnknownNameError("search", str(method), SEARCHES)
    check_known(f"search={method} key", options, SEARCHES[method])
    return checked("search.", options, SEARCHES[method])


def search_weights(search: Search, nbest: NBest | None, features: Features, stats: NBestStats,
                   columns: Sequence[Column]) -> SearchResult:
    """The best weights on the dev set by ``search``."""
    if search.method == "grid":
        return grid_search(nbest, features, stats, columns)
    if search.method == "fast":
        return fast_search(features, stats, columns, **search.options)
    return robust_search(features, stats, columns, **search.options)
