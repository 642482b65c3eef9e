"""rescorer: rescore ASR/MT N-best lists with language models.

The Python API (README "Python API"): read and write N-best lists (``read_nbest``, ``write_nbest``), score texts
(``load_scorer``), judge them (``wer``, ``bleu``), and the whole job in one call (``rescore``: tune the weights on a
dev list, apply them to the others, get the report and the re-ranked lists); its steps are in ``rescorer.pipeline``.
"""
from . import pipeline
from .engine import load_scorer
from .errors import ConfigError, NBestFormatError, RescorerError, ScorerError
from .io import FORMATS, detect_format, nbest_from_generate, read_nbest, write_nbest
from .metrics import bleu, wer
from .pipeline.api import rescore
from .pipeline.rescore import Rescored
from .types import Hypothesis, NBest, Utterance
from .version import __version__

__all__ = [
    "FORMATS", "ConfigError", "Hypothesis", "NBest", "NBestFormatError", "Rescored", "RescorerError", "ScorerError",
    "Utterance", "__version__", "bleu", "detect_format", "load_scorer", "nbest_from_generate", "pipeline",
    "read_nbest", "rescore", "wer", "write_nbest",
]
