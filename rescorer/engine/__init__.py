"""Running scorers: the score store, batching by token budget, OOM back-off, progress, scale-out."""
from .bound import BoundScorer
from .cores import apply_threads, available_cores, default_threads, task_threads
from .factory import ENGINE_KEYS, EngineSettings, load_scorer, load_scorers
from .local import EngineStats
from .runner import Engine, ScoredTexts

__all__ = ["ENGINE_KEYS", "BoundScorer", "Engine", "EngineSettings", "EngineStats", "ScoredTexts", "apply_threads",
           "available_cores", "default_threads", "load_scorer", "load_scorers", "task_threads"]
