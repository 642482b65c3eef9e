"""The main job as plain functions, usable without Hydra:
read sets → score (through the engine) → features → tune → apply → write outputs and report."""
from .evaluate import evaluate
from .outputs import write_1best, write_scored
from .rescore import (
           RESCORE_COLUMN,
           ScoredSet,
           apply,
           default_columns,
           prepare,
           reranked,
           rescore,
           tune,
)
from .score import score_sets
from .scoring import perplexity, score_nbest, set_perplexities
from .sets import read_sets, tuning_set

__all__ = ["RESCORE_COLUMN", "ScoredSet", "apply", "default_columns", "evaluate", "perplexity", "prepare",
           "read_sets", "reranked", "rescore", "score_nbest", "score_sets", "set_perplexities", "tune",
           "tuning_set", "write_1best", "write_scored"]
