"""Minimal pairs and acceptability: pair readers, judgment methods, accuracy, PLL desiderata."""
from .data import Pair, PairSet, read_pairs, read_sentences
from .methods import Judge, Judgments, ensemble, majority, parse_ensemble

__all__ = ["Judge", "Judgments", "Pair", "PairSet", "ensemble", "majority", "parse_ensemble", "read_pairs",
           "read_sentences"]
