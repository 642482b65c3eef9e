"""Batching and running scorer rows: the hot path."""
from .runner import EngineConfig, EngineStats, run

__all__ = ["EngineConfig", "EngineStats", "run"]
