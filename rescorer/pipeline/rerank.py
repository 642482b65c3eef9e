"""Re-ranking under given weights: a set scored with every LM (:class:`ScoredSet`), re-ranked in order where an
LM reads the chosen 1-bests before it, and what changed (the metric with its paired-bootstrap interval where there
are references, the changed 1-bests always)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Mapping, Sequence

import numpy as np

from ..changes import Change, changed
from ..combine import Column, Features, totals
from ..combine.interpolate import best_ranks
from ..engine import BoundScorer, ScoredTexts
from ..metrics import Metric, NBestStats, paired_bootstrap, significance
from ..options import RunOptions
from ..types import NBest, Utterance
from ..report import Interval, SetReport
from .scoring import reranking, score_nbest, set_perplexities

RESCORE_COLUMN = "rescore"
RERANK_BLOCK = 8192  # utterances whose totals are made Python numbers at a time


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
    with references, when ``judged``). Given a ``kept`` set, only the LMs whose context reads the re-ranked 1-bests ``firsts``
    score again."""
    again = reranking(scorers)
    scored, scores = score_nbest(nbest, scorers, firsts, kept and {n: s for n, s in kept.scores.items()
                                                                   if n not in again})
    token_counts = {name: [len(t) for t in s.tokens] for name, s in scores.items()}
    values = {name: np.asarray(s.totals, dtype=float) for name, s in scores.items()}
    stats = kept.stats if kept else (NBestStats.compute(scored, metric) if judged and any(u.ref is not None
                                                                                        for u in nbest) else None)
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
        prepared = prepare(nbest, scorers, base, columns, metric, firsts, prepared)
    raise AssertionError("re-ranking in order did not settle")  # each pass settles at least one more utterance


def reranked(nbest: NBest, features: Features, weights: np.ndarray) -> NBest:
    """Hypotheses sorted by their interpolated total (stable: ties keep the toolkit's order), with a column for it."""
    return nbest.with_utterances(list(reranked_utterances(nbest, features, weights)))


def best_first(scores: np.ndarray) -> list[list[int]]:
    """Each utterance's hypothesis indices by total ``scores[u, k]``, best first; stable, so ties keep the toolkit's
    order and padding slots (−inf, after an utterance's own) come last."""
    return np.argsort(-scores, axis=-1, kind="stable").tolist()


def reranked_utterances(nbest: NBest, features: Features, weights: np.ndarray) -> Iterator[Utterance]:
    """The utterances of :func:`reranked`, made one block at a time as they are asked for."""
    scores = totals(features, weights)
    for start in range(0, len(nbest), RERANK_BLOCK):
        block = scores[start : start + RERANK_BLOCK]
        for utt, order, total in zip(nbest.utterances[start : start + RERANK_BLOCK], best_first(block), block.tolist()):
            yield utt.with_hyps([utt.hyps[k].with_scores(**{RESCORE_COLUMN: total[k]}) for k in order[: len(utt.hyps)]])


def apply_weights(scored: ScoredSet, weights: np.ndarray, metric: Metric, bootstrap: int = 1000,
                  seed: int = 0) -> tuple[NBest, SetReport]:
    """The re-ranked list under ``weights`` and what changed (:func:`report_entry`)."""
    _, entry = report_entry(scored, weights, metric, bootstrap, seed)
    return reranked(scored.nbest, scored.features, weights), entry


def report_entry(scored: ScoredSet, weights: np.ndarray, metric: Metric, bootstrap: int = 1000,
                 seed: int = 0) -> tuple[np.ndarray, SetReport]:
    """The rank of each utterance's new 1-best under ``weights`` and what changed: with references, baseline,
    rescored and oracle metric and the paired-bootstrap CI of the change; without, the counts."""
    ranks = best_ranks(scored.features, weights)
    entry = SetReport(format=scored.nbest.fmt, utterances=len(scored.nbest), hypotheses=scored.nbest.num_hypotheses,
                      references=scored.stats is not None,
                      changed_1best=sum(a != b for a, b in zip(scored.nbest.select(np.zeros_like(ranks)),
                                                               scored.nbest.select(ranks))))
    stats, scale = scored.stats, metric.scale
    if stats is not None:
        base_ranks = stats.baseline_ranks()
        ci = paired_bootstrap(stats, base_ranks, ranks, samples=bootstrap, seed=seed)
        entry.baseline = {metric.name: scale * stats.score(base_ranks)}
        entry.rescored = {metric.name: scale * stats.score(ranks)}
        entry.oracle = {metric.name: scale * stats.score(stats.oracle_ranks())}
        entry.ci95 = Interval(of=f"rescored - baseline {metric.name}", low=scale * ci["low"], high=scale * ci["high"],
                              p_better=ci["p_better"], samples=ci["samples"])
        entry.change = significance(ci["low"], ci["high"], metric.higher_is_better, len(scored.nbest), bootstrap,
                                    stats.score(ranks) == stats.score(base_ranks))
    return ranks, entry


@dataclass(frozen=True)
class Applied:
    """One set after re-ranking: its report entry and changed 1-bests. The re-ranked list is made when asked for,
    so that a run writing many sets holds one re-ranked list at a time."""

    scored: ScoredSet
    weights: np.ndarray
    entry: SetReport
    changes: list[Change]

    def nbest(self) -> NBest:
        """The set re-ranked (made anew at each call)."""
        return reranked(self.scored.nbest, self.scored.features, self.weights)

    def utterances(self) -> Iterator[Utterance]:
        """The re-ranked utterances, made a block at a time as they are asked for."""
        return reranked_utterances(self.scored.nbest, self.scored.features, self.weights)

    def firsts(self) -> list[str]:
        """The re-ranked 1-best texts."""
        return self.scored.nbest.select(best_ranks(self.scored.features, self.weights))


class RerankedSets(Mapping[str, NBest]):
    """Each set's re-ranked list by name, made on first access and kept."""

    def __init__(self, applied: Mapping[str, Applied]):
        self._applied, self._made = applied, {}

    def __getitem__(self, name: str) -> NBest:
        if name not in self._made:
            self._made[name] = self._applied[name].nbest()
        return self._made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._applied)

    def __len__(self) -> int:
        return len(self._applied)

    def __repr__(self) -> str:
        return f"RerankedSets({', '.join(self._applied)})"


def apply_all(prepared: Mapping[str, ScoredSet], weights: np.ndarray, metric: Metric,
              scorers: Mapping[str, BoundScorer], run: RunOptions, dev: str | None) -> dict[str, Applied]:
    """Every set re-ranked under ``weights`` with its report entry ((P)PPL per LM, changed 1-bests judged
    against the references where there are some; ``dev``: the set tuned on, if any)."""
    applied = {}
    for name, scored in prepared.items():
        ranks, entry = report_entry(scored, weights, metric, run.bootstrap, run.seed)
        old, firsts = scored.nbest, scored.nbest.select(ranks)
        changes = changed([u.id for u in old], old.select([0] * len(old)), firsts, [u.ref for u in old], metric)
        if scored.stats is not None:
            entry.better, entry.worse, entry.same = (sum(c.verdict == verdict for c in changes)
                                                     for verdict in ("better", "worse", "same"))
        entry.tuned_on_this_set = name == dev
        if name == dev:
            entry.change += " (tuned here)"
        entry.ppl = {column: set_perplexities(old, scorer, scored.scores[column], "rescored_1best", firsts)
                     for column, scorer in scorers.items()}
        applied[name] = Applied(scored, weights, entry, changes)
    return applied
