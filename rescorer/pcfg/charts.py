"""Exact conditionals of a CNF PCFG: inside–outside for masked words, prefix probabilities for
next words, vectorised over all spans of one width.

Charts are indexed by half-open spans [i, j). Each cell holds a vector over symbols divided by its largest
entry, and the log of that factor, so long sentences never underflow and ratios stay exact.

- Masked: P(w_i | w_\\i) = Σ_A α_A(i) P(A → w_i) / Σ_A α_A(i) P(A → any word), the outside vector α of the
  one-word span (Jumelet & Zuidema eq. 3; the denominator is their Σ_k α_k over preterminals, written so a
  symbol with both binary and lexical rules counts only its lexical share).
- Causal: P(w_j | w_<j) = P(prefix w_≤j) / P(prefix w_<j) (Jelinek & Lafferty 1991): with the left-corner
  closure R_L = (I − P_L)⁻¹, P_L[A, B] = Σ_C P(A → B C),
  Q_A(i, i+1) = Σ_B R_L[A, B] P(B → w_i),
  Q_A(i, j) = Σ_B R_L[A, B] Σ_{B → D E} P(B → D E) Σ_k β_D(i, k) Q_E(k, j),
  and P(prefix w_<j) = Q_start(0, j). This assumes a consistent grammar (every symbol derives a finite
  string with probability 1), which is checked.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np
from scipy import sparse

from ..errors import ConfigError
from .grammar import PCFG

Chart = tuple[np.ndarray, np.ndarray]  # (vectors [n+1, n+1, N] scaled to max 1, log scales [n+1, n+1])


def _scaled(vectors: np.ndarray, log_scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row divided by its maximum, the log of which joins ``log_scale``; all-zero rows get −inf."""
    top = vectors.max(axis=1)
    alive = (top > 0) & np.isfinite(log_scale)
    safe = np.where(alive, top, 1.0)
    with np.errstate(divide="ignore"):
        scales = np.where(alive, log_scale + np.log(safe), -np.inf)
    return np.where(alive[:, None], vectors / safe[:, None], 0.0), scales


def _weights(log_scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row factors exp(scale − row max) and the row max (0 where a row has no finite scale)."""
    top = log_scales.max(axis=1)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(invalid="ignore"):
        return np.exp(log_scales - top[:, None]), top


def _impossible(log_probs: np.ndarray) -> np.ndarray:
    """−inf (probability 0) where a conditional is 0/0: its context itself is impossible."""
    return np.where(np.isnan(log_probs), -np.inf, log_probs)


def _rules(vectors: np.ndarray, symbols: np.ndarray) -> np.ndarray:
    """``vectors[..., symbols]`` (``np.take`` is the fast gather here)."""
    return np.take(vectors, symbols, axis=-1)


def _scatter(symbols: np.ndarray, size: int) -> sparse.csr_array:
    """[symbols × rules] 0/1 matrix: summed per-rule values → per-symbol values."""
    return sparse.csr_array((np.ones(len(symbols)), (symbols, np.arange(len(symbols)))), shape=(size, len(symbols)))


class Charts:
    """The inside, outside and prefix charts of sentences under one grammar."""

    def __init__(self, grammar: PCFG):
        self.grammar = g = grammar
        self.to_lhs, self.to_left, self.to_right = (_scatter(s, g.num_symbols) for s in (g.lhs, g.left, g.right))
        self.lexicon = sparse.csc_array((g.lex_prob, (g.lex_lhs, g.lex_word)), shape=(g.num_symbols, len(g.words)))

    def leaves(self, ids: np.ndarray) -> np.ndarray:
        """[n, N]: P(A → w_i)."""
        return self.lexicon[:, np.asarray(ids)].toarray().T

    def _combine(self, left: Chart, right: Chart, width: int, length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For every span [i, i+width): Σ_k Σ_r P(r) left_{B_r}(i, k) right_{C_r}(k, j) gathered by rule lhs."""
        g = self.grammar
        i = np.arange(length - width + 1)[:, None]
        k = i + np.arange(1, width)[None, :]
        j = i + width
        weight, top = _weights(left[1][i, k] + right[1][k, j])
        products = _rules(left[0][i, k], g.left) * _rules(right[0][k, j], g.right)
        per_rule = np.einsum("sk,skr->sr", weight, products) * g.prob
        return i[:, 0], (self.to_lhs @ per_rule.T).T, top

    def inside(self, ids: np.ndarray) -> Chart:
        n, size = len(ids), self.grammar.num_symbols
        vectors, scales = np.zeros((n + 1, n + 1, size)), np.full((n + 1, n + 1), -np.inf)
        at = np.arange(n)
        vectors[at, at + 1], scales[at, at + 1] = _scaled(self.leaves(ids), np.zeros(n))
        for width in range(2, n + 1):
            i, summed, top = self._combine((vectors, scales), (vectors, scales), width, n)
            vectors[i, i + width], scales[i, i + width] = _scaled(summed, top)
        return vectors, scales

    def outside(self, ids: np.ndarray, inside: Chart) -> Chart:
        g, n = self.grammar, len(ids)
        beta, beta_scale = inside
        vectors, scales = np.zeros_like(beta), np.full_like(beta_scale, -np.inf)
        vectors[0, n, g.start], scales[0, n] = 1.0, 0.0
        for width in range(n - 1, 0, -1):
            i = np.arange(n - width + 1)[:, None]
            j = i + width
            d = np.arange(1, n - width + 1)[None, :]
            end = np.minimum(j + d, n)        # as a left child: parent [i, j+d), sibling [j, j+d)
            begin = np.maximum(i - d, 0)      # as a right child: parent [i-d, j), sibling [i-d, i)
            as_left = np.where(j + d <= n, scales[i, end] + beta_scale[j, end], -np.inf)
            as_right = np.where(i - d >= 0, scales[begin, j] + beta_scale[begin, i], -np.inf)
            weight, top = _weights(np.concatenate([as_left, as_right], axis=1))
            left = np.einsum("sd,sdr->sr", weight[:, : d.shape[1]],
                             _rules(vectors[i, end], g.lhs) * _rules(beta[j, end], g.right)) * g.prob
            right = np.einsum("sd,sdr->sr", weight[:, d.shape[1]:],
                              _rules(vectors[begin, j], g.lhs) * _rules(beta[begin, i], g.left)) * g.prob
            summed = (self.to_left @ left.T + self.to_right @ right.T).T
            vectors[i[:, 0], j[:, 0]], scales[i[:, 0], j[:, 0]] = _scaled(summed, top)
        return vectors, scales

    def sentence_log_prob(self, ids: np.ndarray, inside: Chart | None = None) -> float:
        """log P(w) — the inside probability of the whole sentence from the start symbol."""
        vectors, scales = inside or self.inside(ids)
        n = len(ids)
        with np.errstate(divide="ignore"):
            return float(np.log(vectors[0, n, self.grammar.start]) + scales[0, n]) if n else -np.inf

    def masked_log_probs(self, ids: np.ndarray) -> np.ndarray:
        """log P(w_i | w_\\i) for every position (−inf where the context admits no word, or not this one)."""
        ids = np.asarray(ids, dtype=np.int64)
        if not len(ids):
            return np.zeros(0)
        n = len(ids)
        alpha = self.outside(ids, self.inside(ids))[0][np.arange(n), np.arange(n) + 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            return _impossible(np.log((alpha * self.leaves(ids)).sum(1)) - np.log(alpha @ self.grammar.lexical_mass))

    # ---- prefix probabilities
    @cached_property
    def left_corner_closure(self) -> sparse.csr_array:
        """R_L = (I − P_L)⁻¹, sparse (B must be a left-corner descendant of A); the grammar must be consistent."""
        g = self.grammar
        worst = float(g.partition().min())
        if worst < 1 - 1e-6:
            raise ConfigError(f"prefix probabilities need a consistent grammar: a symbol derives a finite string "
                              f"with probability {worst:.6g} < 1")
        corner = np.zeros((g.num_symbols, g.num_symbols))
        np.add.at(corner, (g.lhs, g.left), g.prob)
        return sparse.csr_array(np.linalg.inv(np.eye(g.num_symbols) - corner))

    def prefix_log_probs(self, ids: np.ndarray, inside: Chart | None = None) -> np.ndarray:
        """log P(w_0 … w_{j-1} is a prefix) for j = 0 … n (j = 0: log 1)."""
        ids = np.asarray(ids, dtype=np.int64)
        n, size = len(ids), self.grammar.num_symbols
        closure = self.left_corner_closure
        beta = inside or self.inside(ids)
        vectors, scales = np.zeros((n + 1, n + 1, size)), np.full((n + 1, n + 1), -np.inf)
        at = np.arange(n)
        vectors[at, at + 1], scales[at, at + 1] = _scaled((closure @ self.leaves(ids).T).T, np.zeros(n))
        for width in range(2, n + 1):
            i, summed, top = self._combine(beta, (vectors, scales), width, n)
            vectors[i, i + width], scales[i, i + width] = _scaled((closure @ summed.T).T, top)
        with np.errstate(divide="ignore"):
            return np.r_[0.0, np.log(vectors[0, 1:, self.grammar.start]) + scales[0, 1:]]

    def causal_log_probs(self, ids: np.ndarray, eos: bool = False) -> np.ndarray:
        """log P(w_j | w_<j) for every position, then log P(end | w) when ``eos``."""
        ids = np.asarray(ids, dtype=np.int64)
        inside = self.inside(ids)
        prefix = self.prefix_log_probs(ids, inside)
        with np.errstate(invalid="ignore"):
            steps = np.diff(prefix)
            if eos:
                steps = np.r_[steps, self.sentence_log_prob(ids, inside) - prefix[-1]]
        return _impossible(steps)
