"""Running scorers: the score store, batching by token budget, OOM back-off, progress, scale-out."""
from .bound import BoundScorer
from .factory import EngineSettings, load_scorer, load_scorers
from .runner import Engine, EngineStats, ScoredTexts

__all__ = ["BoundScorer", "Engine", "EngineSettings", "EngineStats", "ScoredTexts", "load_scorer", "load_scorers"]
