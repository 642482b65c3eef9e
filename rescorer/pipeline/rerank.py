"""Re-ranking under given weights: a list scored with every LM (:class:`ScoredSet`), re-ranked in order where an
LM reads the chosen 1-bests before it, and the one function that sorts hypotheses by their total (:func:`rerank`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..combine import Column, Features, totals
from ..combine.interpolate import best_ranks
from ..engine import BoundScorer, ScoredTexts
from ..metrics import Metric, NBestStats
from ..types import NBest
from .scoring import reranking, score_nbest

RESCORE_COLUMN = "rescore"


@dataclass(frozen=True)
class ScoredSet:
    """One set ready to tune and apply: the list with LM columns, its LM scores, features and metric statistics."""

    nbest: NBest
    scores: Mapping[str, ScoredTexts]
    features: Features
    stats: NBestStats | None  # None for a list without references


def prepare(nbest: NBest, scorers: Mapping[str, BoundScorer], base: Column, columns: Sequence[Column],
            metric: Metric, firsts: Sequence[str] | None = None, kept: ScoredSet | None = None,
            judged: bool = True) -> ScoredSet:
    """Score ``nbest`` with every LM and gather what tuning and applying need (metric statistics only for a list
    with references, when ``judged``). Given a ``kept`` set, only the LMs whose context reads the re-ranked 1-bests
    ``firsts`` score again."""
    again = reranking(scorers)
    scored, scores = score_nbest(nbest, scorers, firsts, kept and {n: s for n, s in kept.scores.items()
                                                                   if n not in again})
    token_counts = {name: [len(t) for t in s.tokens] for name, s in scores.items()}
    values = {name: np.asarray(s.totals, dtype=float) for name, s in scores.items()}
    stats = kept.stats if kept is not None and kept.stats is not None else (
        NBestStats.compute(scored, metric) if judged and any(u.ref is not None for u in nbest) else None)
    return ScoredSet(scored, scores, Features.of(scored, base, columns, token_counts, values), stats)


def in_order(nbest: NBest, prepared: ScoredSet, scorers: Mapping[str, BoundScorer], base: Column,
             columns: Sequence[Column], metric: Metric, weights: np.ndarray) -> ScoredSet:
    """``prepared`` (contexts from the input 1-bests) re-ranked recording by recording in order under ``weights``,
    for LMs whose context reads the re-ranked 1-bests: each utterance is scored after the 1-bests already chosen
    before it. Found as the fixed point of re-ranking and re-scoring, which is that order's result: the first
    utterance of each recording is settled by the first pass, the next by the second, and so on; the store keeps
    what earlier passes scored."""
    if not reranking(scorers):
        return prepared
    firsts = nbest.select([0] * len(nbest))
    for _ in range(len(nbest) + 1):
        chosen = prepared.nbest.select(best_ranks(prepared.features, weights))
        if chosen == firsts:
            return prepared
        firsts = chosen
        prepared = prepare(nbest, scorers, base, columns, metric, firsts, prepared, prepared.stats is not None)
    raise AssertionError("re-ranking in order did not settle")  # each pass settles at least one more utterance


def rerank(nbest: NBest, features: Features, weights: np.ndarray) -> tuple[NBest, np.ndarray]:
    """The one re-ranking: each utterance's hypotheses sorted by their interpolated total, best first (a stable
    sort: ties keep the toolkit's order), each with its total as column ``rescore``; and the input rank of each new
    1-best."""
    scores = totals(features, weights)
    orders = np.argsort(-scores, axis=-1, kind="stable")
    utterances = [utt.with_hyps([utt.hyps[k].with_score(RESCORE_COLUMN, total[k]) for k in order[: len(utt.hyps)]])
                  for utt, order, total in zip(nbest.utterances, orders.tolist(), scores.tolist())]
    return nbest.with_utterances(utterances), orders[:, 0]
