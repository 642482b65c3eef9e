"""The main job as plain functions, usable without Hydra:
read sets → score (through the engine) → features → tune → apply → write outputs and report.
``rescore`` (``rescorer.rescore``, what ``task=rescore`` runs) does it all in one call, ``apply`` re-ranks new lists
with a tuned rescorer."""
from .api import apply, rescore
from .baseline import evaluate
from .outputs import write_1best, write_scored
from ..report import Interval, Report, SearchSummary, SetReport
from .rerank import RESCORE_COLUMN, ScoredSet, prepare, rerank
from .rescore import Rescored, apply_tuned, default_columns, rescore_loaded, tune
from .annotate import score_sets
from .scoring import perplexity, score_nbest, set_perplexities
from .stream import apply_blocks, apply_weights
from .sets import read_sets, tuning_set
from ..tuned.file import Tuned

__all__ = ["RESCORE_COLUMN", "Interval", "Report", "Rescored", "ScoredSet", "SearchSummary", "SetReport", "Tuned",
           "apply", "apply_blocks", "apply_tuned", "apply_weights", "default_columns", "evaluate", "perplexity", "prepare", "read_sets",
           "rerank", "rescore", "rescore_loaded", "score_nbest", "score_sets", "set_perplexities", "tune",
           "tuning_set", "write_1best", "write_scored"]
