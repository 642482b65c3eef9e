"""Log-linear interpolation of score columns and the weight search on a dev set."""
from .interpolate import Column, Features, totals
from .rules import Search, search_weights
from .search import SearchResult, fast_search, grid_search, weight_grid

__all__ = ["Column", "Features", "Search", "SearchResult", "fast_search", "grid_search", "search_weights", "totals",
           "weight_grid"]
