"""The main job as plain functions, usable without Hydra:
read sets → score (through the engine) → features → tune → apply → write outputs and report.
``rescorer.rescore`` (``pipeline/api.py``) does it all in one call."""
from .evaluate import evaluate
from .outputs import write_1best, write_scored
from .rescore import (RESCORE_COLUMN, Rescored, ScoredSet, apply_tuned, apply_weights, default_columns, prepare,
                      reranked, rescore_lists, tune)
from .score import score_sets
from .scoring import perplexity, score_nbest, set_perplexities
from .sets import read_sets, tuning_set
from .tuned import Tuned

__all__ = ["RESCORE_COLUMN", "Rescored", "ScoredSet", "Tuned", "apply_tuned", "apply_weights", "default_columns",
           "evaluate", "perplexity", "prepare", "read_sets", "reranked", "rescore_lists", "score_nbest", "score_sets",
           "set_perplexities", "tune", "tuning_set", "write_1best", "write_scored"]
