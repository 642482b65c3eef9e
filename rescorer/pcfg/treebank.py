"""Induce a CNF PCFG from Penn Treebank bracketed trees (``.mrg``, in a directory or NLTK's ``treebank.zip``).

Each tree is cleaned (empty elements ``-NONE-`` and the constituents they leave empty removed, function
tags and indices stripped: ``NP-SBJ-1`` → ``NP``), its unary chains collapsed (``S → VP → …`` becomes one
node ``S+VP``, a preterminal keeps its chain: ``NP+NN → 'dog'``; the ``ROOT`` wrapper absorbs its chain),
and binarised to the right with horizontal Markovisation (with ``markov=1``, ``NP → DT JJ NN`` becomes
``NP → DT NP|<JJ>`` and ``NP|<JJ> → JJ NN``; a new label names the next ``markov`` siblings). Words seen
fewer than ``unk_below`` times become the word ``<unk>``. Rule probabilities are relative frequencies; lexical rules get add-k smoothing over the whole vocabulary:
P(A → w) = (c(A → w) + k) / (c(A) + k·|V|) for every word w and every symbol A seen above a word, so every
left side still sums to 1 and any word can appear under any preterminal.
"""
from __future__ import annotations

import re
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Union

import numpy as np

from ..errors import ConfigError
from ..io.common import read_text
from .grammar import PCFG, GrammarFileError, read_grammar

Tree = tuple[str, list[Union["Tree", str]]]  # (label, children); a preterminal's only child is its word
ROOT = "ROOT"
UNK = "<unk>"
_TOKEN = re.compile(r"\(|\)|[^\s()]+")


@dataclass(frozen=True)
class Induction:
    """How a grammar is induced: ``k`` (add-k on lexical rules), ``markov`` (children kept in a binarised
    node's label; None: all), ``unk_below`` (words seen fewer times become ``<unk>``), ``lowercase``."""

    k: float = 0.001
    markov: int | None = 1
    unk_below: int = 2
    lowercase: bool = False

    def __post_init__(self) -> None:
        if self.k < 0 or (self.markov is not None and self.markov < 1):
            raise ConfigError(f"induction needs k >= 0 and markov >= 1 (or null), got k={self.k}, markov={self.markov}")


def parse_trees(text: str, source: str | Path = "<string>") -> list[Tree]:
    """Every bracketed tree in ``text``; an unbalanced bracket is an error naming its line."""
    trees: list[Tree] = []
    stack: list[Tree] = []
    tokens = list(_TOKEN.finditer(text))
    for i, match in enumerate(tokens):
        token = match.group()
        if token == "(":
            following = tokens[i + 1].group() if i + 1 < len(tokens) else ")"
            stack.append(("" if following in "()" else following, []))
        elif token == ")":
            if not stack:
                raise GrammarFileError(source, _line(text, match), "unbalanced ')'", token)
            node = stack.pop()
            (stack[-1][1] if stack else trees).append(node)
        elif not stack:
            raise GrammarFileError(source, _line(text, match), "text outside a tree", token)
        elif tokens[i - 1].group() != "(":
            stack[-1][1].append(token)
    if stack:
        raise GrammarFileError(source, None, "unbalanced '(' at the end of the file", stack[-1][0])
    return trees


def _line(text: str, match: re.Match) -> int:
    return text.count("\n", 0, match.start()) + 1


def read_treebank(path: str | Path) -> list[Tree]:
    """All trees of a ``.mrg`` file, a directory of them, or a zip holding them (NLTK's ``treebank.zip``)."""
    path = Path(path)
    if path.suffix == ".zip" and path.is_file():
        with zipfile.ZipFile(path) as archive:
            names = sorted(n for n in archive.namelist() if n.endswith(".mrg"))
            files = [(f"{path}:{n}", archive.read(n).decode("utf-8", errors="replace")) for n in names]
    elif path.is_dir():
        files = [(str(f), read_text(f)) for f in sorted(path.rglob("*.mrg"))]
    elif path.is_file():
        files = [(str(path), read_text(path))]
    else:
        raise ConfigError(f"treebank: no such file or directory: {path}")
    if not files:
        raise ConfigError(f"treebank: no .mrg files in {path}")
    return [tree for source, text in files for tree in parse_trees(text, source)]


def base_label(label: str) -> str:
    """``NP-SBJ-1`` → ``NP``, ``PP-LOC=2`` → ``PP``, ``ADVP|PRT`` → ``ADVP``; labels starting with ``-``
    (``-LRB-``, ``-NONE-``) are kept."""
    return label if label.startswith("-") else re.split(r"[-=|]", label)[0]


def clean(tree: Tree, lowercase: bool = False) -> Tree | None:
    """Without empty elements and function tags; None when nothing is left."""
    label, children = tree
    if label == "-NONE-":
        return None
    if children and isinstance(children[0], str):
        return (base_label(label), [children[0].lower() if lowercase else children[0]])
    kept = [c for c in (clean(child, lowercase) for child in children) if c is not None]
    return (base_label(label), kept) if kept else None


def collapse_unaries(tree: Tree, root: bool = False) -> Tree:
    """Unary chains A → B → … as one node ``A+B`` (the root keeps its own label)."""
    label, children = tree
    while len(children) == 1 and not isinstance(children[0], str):
        child_label, children = children[0]
        label = label if root else f"{label}+{child_label}"
    if children and isinstance(children[0], str):
        return (label, children)
    return (label, [collapse_unaries(c) for c in children])


def binarise(tree: Tree, markov: int | None) -> Tree:
    """Right-factored binary branching; a new node is named ``A|<labels of the next ≤ markov children>``."""
    label, children = tree
    if isinstance(children[0], str):
        return tree
    return (label, _right_factored(label, [binarise(c, markov) for c in children], markov))


def _right_factored(parent: str, kids: list[Tree], markov: int | None) -> list[Tree]:
    if len(kids) <= 2:
        return kids
    rest = kids[1:]
    shown = [k[0] for k in rest][: markov or len(rest)]
    return [kids[0], (f"{parent}|<{'-'.join(shown)}>", _right_factored(parent, rest, markov))]


def cnf_trees(trees: list[Tree], markov: int | None = 1, lowercase: bool = False) -> Iterator[Tree]:
    """Cleaned, unary-collapsed, binarised trees rooted at ``ROOT``."""
    for tree in trees:
        cleaned = clean(tree if tree[0] == "" else ("", [tree]), lowercase)
        if cleaned is None:
            continue
        yield binarise(collapse_unaries((ROOT, cleaned[1]), root=True), markov)


def count_rules(trees: Iterator[Tree]) -> tuple[Counter, Counter]:
    """(binary rule counts {(A, B, C)}, lexical counts {(A, w)})."""
    binary: Counter = Counter()
    lexical: Counter = Counter()
    stack = list(trees)
    while stack:
        label, children = stack.pop()
        if isinstance(children[0], str):
            lexical[label, children[0]] += 1
        else:
            binary[label, children[0][0], children[1][0]] += 1
            stack.extend(children)
    return binary, lexical


def induce(trees: list[Tree], options: Induction = Induction()) -> PCFG:
    """The relative-frequency CNF grammar of ``trees`` with add-k smoothed lexical rules (see the module)."""
    binary, lexical = count_rules(cnf_trees(trees, options.markov, options.lowercase))
    if not lexical:
        raise ConfigError("treebank: no trees with words")
    word_counts: Counter = Counter()
    for (_, word), c in lexical.items():
        word_counts[word] += c
    rare = {w for w, c in word_counts.items() if c < options.unk_below}
    if rare:
        merged: Counter = Counter()
        for (tag, word), c in lexical.items():
            merged[tag, UNK if word in rare else word] += c
        lexical = merged
    symbols = list(dict.fromkeys([ROOT, *(a for a, *_ in binary), *(a for a, _ in lexical)]))
    index = {s: i for i, s in enumerate(symbols)}
    words = sorted({w for _, w in lexical})
    word_index = {w: i for i, w in enumerate(words)}
    n, v = len(symbols), len(words)
    rules = np.array([(index[a], index[b], index[c], count) for (a, b, c), count in binary.items()], dtype=np.int64)
    rules = rules.reshape(-1, 4)
    seen = np.zeros((n, v))
    for (tag, word), c in lexical.items():
        seen[index[tag], word_index[word]] = c
    preterminals = np.flatnonzero(seen.sum(1) > 0)
    totals = np.bincount(rules[:, 0], rules[:, 3], n) + seen.sum(1)
    denominator = totals + options.k * v * (seen.sum(1) > 0)
    table = seen[preterminals] + options.k
    keep = table > 0
    lex_lhs = np.repeat(preterminals, keep.sum(1))
    return PCFG(tuple(symbols), tuple(words), 0, rules[:, 0], rules[:, 1], rules[:, 2],
                rules[:, 3] / denominator[rules[:, 0]], lex_lhs, np.nonzero(keep)[1],
                table[keep] / denominator[lex_lhs])


def induce_from(path: str | Path, options: Induction = Induction()) -> PCFG:
    """``induce(read_treebank(path), options)``."""
    return induce(read_treebank(path), options)


def load_grammar(source: str | Path, options: Induction = Induction()) -> PCFG:
    """A rule file, or the grammar induced from a treebank (a ``.zip``, a directory of ``.mrg``, one ``.mrg``)."""
    path = Path(source)
    if path.is_dir() or path.suffix in (".zip", ".mrg"):
        return induce_from(path, options)
    return read_grammar(path)
