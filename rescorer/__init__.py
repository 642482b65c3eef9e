"""rescorer: rescore ASR/MT N-best lists with language models."""
__version__ = "0.1.0"

from .errors import ConfigError, NBestFormatError, RescorerError, ScorerError
from .io import FORMATS, detect_format, read_nbest, write_nbest
from .metrics import bleu, wer
from .types import Hypothesis, NBest, Utterance

__all__ = [
    "FORMATS", "ConfigError", "Hypothesis", "NBest", "NBestFormatError", "RescorerError", "ScorerError",
    "Utterance", "__version__", "bleu", "detect_format", "read_nbest", "wer", "write_nbest",
]
