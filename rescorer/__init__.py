"""rescorer: rescore ASR/MT N-best lists with language models."""
from .engine import load_scorer
from .errors import ConfigError, NBestFormatError, RescorerError, ScorerError
from .io import FORMATS, detect_format, read_nbest, write_nbest
from .metrics import bleu, wer
from .types import Hypothesis, NBest, Utterance
from .version import __version__

__all__ = [
    "FORMATS", "ConfigError", "Hypothesis", "NBest", "NBestFormatError", "RescorerError", "ScorerError",
    "Utterance", "__version__", "bleu", "detect_format", "load_scorer", "read_nbest", "wer", "write_nbest",
]
