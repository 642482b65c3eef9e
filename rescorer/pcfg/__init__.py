"""A known generative grammar as ground truth: CNF PCFGs, exact conditionals, perplexity bounds."""
from .charts import Charts
from .grammar import PCFG, GrammarFileError, read_grammar, write_grammar
from .treebank import UNK, Induction, induce, induce_from, load_grammar, read_treebank

__all__ = ["PCFG", "UNK", "Charts", "GrammarFileError", "Induction", "induce", "induce_from", "load_grammar",
           "read_grammar", "read_treebank", "write_grammar"]
