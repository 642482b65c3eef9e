"""Log-linear interpolation of score columns and the weight search on a dev set."""
from .interpolate import Column, Features, totals
from .search import SearchResult, fast_search, grid_search, search_weights, weight_grid

__all__ = ["Column", "Features", "SearchResult", "fast_search", "grid_search", "search_weights", "totals",
           "weight_grid"]
