"""A PCFG in Chomsky normal form: the data structure, its text rule file, and seeded sampling.

Rule file (UTF-8, one rule per line, ``probability LHS -> RHS``; blank lines and lines starting with ``#``
are skipped)::

    %start S
    0.7 S -> NP VP
    0.4 NP -> 'dogs'

A binary rule has two nonterminals on the right; a lexical rule one word in single quotes (only the outer
quotes are stripped: ``'''`` is the word ``'``). The start symbol is the ``%start`` line, else the left
side of the first rule. Each left side's probabilities must sum to 1 (within 1e-6; they are then
renormalised exactly).
"""
from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from ..errors import ConfigError, NBestFormatError
from ..files import write_text
from ..io.common import read_lines

NORMALISATION_TOLERANCE = 1e-6


class GrammarFileError(NBestFormatError):
    """A PCFG rule file that cannot be read: names the file, line and offending value."""


@dataclass(frozen=True, eq=False)
class PCFG:
    """Binary rules ``lhs → left right`` (``prob``) and lexical rules ``lex_lhs → lex_word`` (``lex_prob``),
    over nonterminals ``symbols`` and terminals ``words`` (indices into them); ``start`` is a symbol index."""

    symbols: tuple[str, ...]
    words: tuple[str, ...]
    start: int
    lhs: np.ndarray
    left: np.ndarray
    right: np.ndarray
    prob: np.ndarray
    lex_lhs: np.ndarray
    lex_word: np.ndarray
    lex_prob: np.ndarray

    @classmethod
    def from_rules(cls, start: str, binary: Iterable[tuple[str, str, str, float]],
                   lexical: Iterable[tuple[str, str, float]]) -> "PCFG":
        """A grammar from ``(A, B, C, p)`` and ``(A, w, p)`` rules; raises ConfigError unless it is proper."""
        binary, lexical = list(binary), list(lexical)
        symbols = list(dict.fromkeys([start, *(a for a, *_ in binary), *(a for a, *_ in lexical)]))
        index = {s: i for i, s in enumerate(symbols)}
        undefined = sorted({s for _, b, c, _ in binary for s in (b, c) if s not in index})
        if undefined:
            raise ConfigError(f"symbols with no rules: {', '.join(undefined[:10])}")
        words = sorted({w for _, w, _ in lexical})
        word_index = {w: i for i, w in enumerate(words)}
        grammar = cls(
            tuple(symbols), tuple(words), 0,
            np.array([index[a] for a, *_ in binary], dtype=np.int64).reshape(-1),
            np.array([index[b] for _, b, _, _ in binary], dtype=np.int64).reshape(-1),
            np.array([index[c] for *_, c, _ in binary], dtype=np.int64).reshape(-1),
            np.array([p for *_, p in binary], dtype=np.float64).reshape(-1),
            np.array([index[a] for a, _, _ in lexical], dtype=np.int64).reshape(-1),
            np.array([word_index[w] for _, w, _ in lexical], dtype=np.int64).reshape(-1),
            np.array([p for *_, p in lexical], dtype=np.float64).reshape(-1))
        totals = grammar.totals
        bad = np.flatnonzero(np.abs(totals - 1) > NORMALISATION_TOLERANCE)
        if len(bad):
            shown = ", ".join(f"{symbols[i]}: {totals[i]:.9g}" for i in bad[:10])
            raise ConfigError(f"rule probabilities of a left side must sum to 1, not ({shown})")
        return grammar.normalised() if np.abs(totals - 1).max() > 1e-12 else grammar  # exact files stay bit-exact

    # ---- derived quantities
    @property
    def num_symbols(self) -> int:
        return len(self.symbols)

    @cached_property
    def word_index(self) -> dict[str, int]:
        return {w: i for i, w in enumerate(self.words)}

    @property
    def totals(self) -> np.ndarray:
        """Summed rule probability of each left side (1 for a proper grammar)."""
        n = self.num_symbols
        return np.bincount(self.lhs, self.prob, n) + np.bincount(self.lex_lhs, self.lex_prob, n)

    @cached_property
    def lexical_mass(self) -> np.ndarray:
        """P(A → some word) per symbol: 1 for a pure preterminal, 0 for a symbol with binary rules only."""
        return np.bincount(self.lex_lhs, self.lex_prob, self.num_symbols)

    def normalised(self) -> "PCFG":
        totals = self.totals
        return PCFG(self.symbols, self.words, self.start, self.lhs, self.left, self.right,
                    self.prob / totals[self.lhs], self.lex_lhs, self.lex_word, self.lex_prob / totals[self.lex_lhs])

    @cached_property
    def fingerprint(self) -> str:
        """A short content hash (symbols, words, rules and probabilities; the order of the rules does not count)."""
        digest = hashlib.sha256()
        digest.update("\n".join(self.symbols).encode() + b"\0" + "\n".join(self.words).encode())
        binary, lexical = np.lexsort((self.right, self.left, self.lhs)), np.lexsort((self.lex_word, self.lex_lhs))
        for array in (self.lhs, self.left, self.right, self.prob):
            digest.update(np.ascontiguousarray(array[binary]).tobytes())
        for array in (self.lex_lhs, self.lex_word, self.lex_prob):
            digest.update(np.ascontiguousarray(array[lexical]).tobytes())
        digest.update(str(self.start).encode())
        return digest.hexdigest()[:12]

    def encode(self, words: Sequence[str]) -> np.ndarray:
        """Word ids of a tokenized sentence; an unknown word is a ConfigError naming it."""
        index = self.word_index
        missing = [w for w in words if w not in index]
        if missing:
            raise ConfigError(f"words not in the grammar's vocabulary: {', '.join(map(repr, missing[:10]))}")
        return np.array([index[w] for w in words], dtype=np.int64)

    def partition(self, iterations: int = 10000, tolerance: float = 1e-14) -> np.ndarray:
        """Z_A = total probability of the finite derivations of each symbol (the least fixed point of
        Z_A = Σ P(A → w) + Σ P(A → B C) Z_B Z_C); all ones for a consistent grammar."""
        z = np.zeros(self.num_symbols)
        for _ in range(iterations):
            new = self.lexical_mass + np.bincount(self.lhs, self.prob * z[self.left] * z[self.right], self.num_symbols)
            if np.abs(new - z).max() < tolerance:
                return new
            z = new
        return z

    # ---- sampling
    @cached_property
    def _expansions(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every rule sorted by left side (then right side), with a search key ``lhs + cumulative probability
        within lhs``."""
        lhs = np.r_[self.lhs, self.lex_lhs]
        first = np.r_[self.left, -1 - self.lex_word]    # a terminal w is coded as -1 - w
        second = np.r_[self.right, np.full(len(self.lex_word), -1)]
        prob = np.r_[self.prob, self.lex_prob]
        order = np.lexsort((second, first, lhs))  # a canonical order: samples do not depend on how rules are stored
        lhs, first, second, prob = lhs[order], first[order], second[order], prob[order]
        cumulative = np.cumsum(prob)
        starts = np.searchsorted(lhs, lhs, side="left")
        ends = np.searchsorted(lhs, lhs, side="right") - 1
        before = np.where(starts > 0, cumulative[starts - 1], 0.0)
        within = (cumulative - before) / (cumulative[ends] - before)
        within[np.r_[lhs[1:] != lhs[:-1], True]] = 1.0
        return lhs + within, first, second

    def sample(self, count: int, seed: int = 0, min_length: int = 1, max_length: int | None = None,
               batch: int = 4096) -> list[str]:
        """``count`` sentences (words joined by spaces) drawn top-down from ``start`` with ``seed``; sentences
        outside [min_length, max_length] words are rejected (every symbol yields ≥ 1 word, so a derivation
        is abandoned as soon as it has too many symbols)."""
        if max_length is not None and max_length < min_length:
            raise ConfigError(f"max_length {max_length} < min_length {min_length}")
        keys, first, second = self._expansions
        rng = np.random.default_rng(seed)
        out: list[str] = []
        for _ in range(1000):
            if len(out) >= count:
                break
            items, owner = np.full(batch, self.start, dtype=np.int64), np.arange(batch)
            while (items >= 0).any():  # expand every open symbol of every sentence, keeping left-to-right order
                open_ = np.flatnonzero(items >= 0)
                rule = np.searchsorted(keys, items[open_] + rng.random(len(open_)), side="right")
                binary = second[rule] >= 0
                width = np.ones(len(items), dtype=np.int64)
                width[open_[binary]] = 2
                at = np.cumsum(width) - width
                items, owner = np.repeat(items, width), np.repeat(owner, width)
                items[at[open_]] = first[rule]
                items[at[open_[binary]] + 1] = second[rule[binary]]
                if max_length is not None:
                    keep = np.bincount(owner, minlength=batch)[owner] <= max_length
                    items, owner = items[keep], owner[keep]
            lengths = np.bincount(owner, minlength=batch)
            bounds = np.r_[0, np.cumsum(lengths)]
            for s in np.flatnonzero((lengths >= max(min_length, 1)) & (lengths <= (max_length or lengths.max())))[
                    : count - len(out)]:
                out.append(" ".join(self.words[-1 - t] for t in items[bounds[s] : bounds[s + 1]]))
        if len(out) < count:
            raise ConfigError(f"drew {len(out)} of {count} sentences of {min_length}-{max_length} words in "
                              f"{1000 * batch} tries")
        return out


# ---- the rule file
def _parse_probability(text: str, path: Path, line: int) -> float:
    try:
        value = float(text)
    except ValueError:
        raise GrammarFileError(path, line, "probability is not a number", text) from None
    if not (0 < value <= 1) or math.isnan(value):
        raise GrammarFileError(path, line, "probability must be in (0, 1]", text)
    return value


def _quoted(token: str) -> bool:
    """A word as the rule file writes it: in single quotes (a symbol such as PTB's ``''`` tag is not)."""
    return len(token) >= 3 and token[0] == token[-1] == "'"


def _word(token: str, path: Path, line: int, raw: str) -> str:
    if not _quoted(token):
        raise GrammarFileError(path, line, "a rule with one right-hand symbol must be lexical, its word in "
                               "single quotes (CNF has no unary rules A -> B)", raw)
    return token[1:-1]


def read_grammar(path: str | Path) -> PCFG:
    """Load a rule file (see the module docstring); every problem names the file and line."""
    path = Path(path)
    start: str | None = None
    binary: dict[tuple[str, str, str], float] = {}
    lexical: dict[tuple[str, str], float] = {}
    first_line: dict[str, int] = {}
    used: dict[str, int] = {}
    for number, raw in enumerate(read_lines(path), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        if fields[0] == "%start":
            if len(fields) != 2:
                raise GrammarFileError(path, number, "expected '%start SYMBOL'", raw)
            if start is not None:
                raise GrammarFileError(path, number, "a second %start line", raw)
            start = fields[1]
            continue
        if len(fields) < 4 or fields[2] != "->":
            raise GrammarFileError(path, number, "expected 'probability LHS -> RHS'", raw)
        if len(fields) > 5:
            raise GrammarFileError(path, number, "not in Chomsky normal form (at most two right-hand symbols)", raw)
        p, lhs, rhs = _parse_probability(fields[0], path, number), fields[1], fields[3:]
        if _quoted(lhs):
            raise GrammarFileError(path, number, "a left-hand side must be a nonterminal, not a quoted word", raw)
        first_line.setdefault(lhs, number)
        if len(rhs) == 1:
            key = (lhs, _word(rhs[0], path, number, raw))
            table: dict = lexical
        else:
            if any(_quoted(s) for s in rhs):
                raise GrammarFileError(path, number, "a binary rule's right side must be two nonterminals", raw)
            key = (lhs, rhs[0], rhs[1])
            table = binary
            for symbol in rhs:
                used.setdefault(symbol, number)
        if key in table:
            raise GrammarFileError(path, number, "duplicate rule", raw)
        table[key] = p
    if not first_line:
        raise GrammarFileError(path, None, "no rules")
    start = start or next(iter(first_line))
    for symbol, number in [*used.items(), (start, None)]:
        if symbol not in first_line:
            raise GrammarFileError(path, number, "symbol has no rules", symbol)
    totals: dict[str, float] = defaultdict(float)
    for (lhs, *_), p in [*binary.items(), *lexical.items()]:
        totals[lhs] += p
    for lhs, total in totals.items():
        if abs(total - 1) > NORMALISATION_TOLERANCE:
            raise GrammarFileError(path, first_line[lhs], f"probabilities of {lhs!r} sum to {total:.9g}, not 1", lhs)
    return PCFG.from_rules(start, [(*k, p) for k, p in binary.items()], [(*k, p) for k, p in lexical.items()])


def write_grammar(grammar: PCFG, path: str | Path, comment: str = "") -> Path:
    """Write ``grammar`` as a rule file (atomically); probabilities keep full precision."""
    s, w = grammar.symbols, grammar.words
    bad = [x for x in (*s, *w) if not x or any(c.isspace() for c in x)] + [x for x in s if _quoted(x)]
    if bad:
        raise ConfigError(f"symbols and words cannot be empty or contain whitespace, nor symbols be quoted: {bad[:5]!r}")
    lines = [f"# {line}" for line in comment.splitlines()] + [f"%start {s[grammar.start]}"]
    order = np.argsort(grammar.lhs, kind="stable")
    lines += [f"{float(grammar.prob[r])!r} {s[grammar.lhs[r]]} -> {s[grammar.left[r]]} {s[grammar.right[r]]}"
              for r in order]
    order = np.argsort(grammar.lex_lhs, kind="stable")
    lines += [f"{float(grammar.lex_prob[r])!r} {s[grammar.lex_lhs[r]]} -> '{w[grammar.lex_word[r]]}'" for r in order]
    path = Path(path)
    write_text(path, "\n".join(lines) + "\n")
    return path
