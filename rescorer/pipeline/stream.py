"""Applying a tuned rescorer to one input, a piece at a time: the input's blocks are grouped into pieces (whole
recordings where a scorer reads context), each piece is scored, re-ranked under the weights by :func:`rerank` and
handed to the outputs, and what it held is counted for the report (:class:`Tally`). Every apply goes this way: a
shard of a corpus, a set of ``task=rescore`` or ``task=apply``, the Python API. Memory is bounded by the piece."""
from __future__ import annotations

import gc
import time
from collections import Counter
from itertools import chain
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from ..changes import VERDICTS, Change, changed
from ..context import groups
from ..engine import BoundScorer, ScoredTexts
from ..errors import ConfigError
from ..metrics import Metric, Perplexity, resampled_change, significance
from ..options import RunOptions
from ..report import Interval, SetReport
from ..io import with_rank
from ..io.sets import NBestSet
from ..types import NBest, Utterance
from .rerank import ScoredSet, in_order, prepare, rerank
from .scoring import perplexity
from ..tuned.file import Tuned

Output = Callable[[NBest], None]  # takes each re-ranked piece, in order
EXAMPLES = 2_000  # changed 1-bests an input keeps to show, the first ones (all are counted)
CHUNK = 10_000  # utterances scored together (a recording is never split)


def set_blocks(source: NBest | NBestSet) -> tuple[NBest, Iterator[NBest]]:
    """What a list is (its format, meta and source, without utterances) and its blocks: a list in memory as one
    block, a set named by its files as its reader reads them (a list without any score ranked by its order,
    :func:`~rescorer.io.with_rank`)."""
    blocks = iter([source]) if isinstance(source, NBest) else (with_rank(block) for block in source.blocks())
    first = next(blocks)
    return first.with_utterances(()), chain([first], blocks)


def pieces(blocks: Iterable[NBest], scorers: Mapping[str, BoundScorer], size: int) -> Iterator[NBest]:
    """The utterances of ``blocks`` in pieces of at least ``size`` (the last one smaller), cut only between two
    recordings of every scorer that reads context, so that each piece holds its recordings whole. A recording must
    be read in one run: one that starts again after others is refused, naming where."""
    patterns = [s.context.group for s in scorers.values() if s.context is not None]
    held: list[Utterance] = []
    owners: list[list[str]] = [[] for _ in patterns]  # each context's recording of each held utterance
    last: list[dict[str, int]] = [{} for _ in patterns]  # each open recording's last utterance (counted from 0)
    closed: list[set[str]] = [set() for _ in patterns]
    done = 0  # utterances handed out so far
    first: NBest | None = None
    for block in blocks:
        first = first or block.with_utterances(())
        for k, pattern in enumerate(patterns):
            found = groups(block, pattern)
            for at, (utt, owner) in enumerate(zip(block.utterances, found), done + len(held)):
                if owner in closed[k]:
                    raise ConfigError(f"{utt.origin or block.source}: utterance {utt.id!r} continues recording "
                                      f"{owner!r} after other recordings; a scorer reading context needs each "
                                      "recording's utterances together (sort the list by utterance id)")
                last[k][owner] = at
            owners[k] += found
        held += block.utterances
        while cut := _cut(owners, last, done, size, len(held)):
            yield block.with_utterances(held[:cut])
            for k, found in enumerate(owners):
                closed[k].update(found[:cut])
                for owner in found[:cut]:
                    last[k].pop(owner, None)
                del found[:cut]
            del held[:cut]
            done += cut
    if held:
        yield first.with_utterances(held)  # type: ignore[union-attr]


def _cut(owners: Sequence[Sequence[str]], last: Sequence[Mapping[str, int]], done: int, size: int, held: int) -> int:
    """Where to cut the ``held`` utterances (the first of them is utterance ``done``): the first place at or after
    ``size`` that no recording of any context spans (``owners``: each context's recording of each held utterance;
    ``last``: each recording's last utterance); 0: none yet."""
    if not owners:
        return size if held >= size else 0
    reach = -1  # the last held utterance of a recording met so far
    for at in range(held):
        if at >= size and reach < at:
            return at
        reach = max([reach, *(last[k][found[at]] - done for k, found in enumerate(owners))])
    return 0


@dataclass
class Tally:
    """What one input held and what re-ranking changed, counted piece by piece: its report entry when all is read.
    ``examples``: the changed 1-bests kept to show (the first ones; all are counted); ``judge``: whether an input
    with references is judged against them (the metric and its interval), as sets are and a corpus's shards not."""

    fmt: str
    metric: Metric
    examples: int
    judge: bool = True
    utterances: int = 0
    hypotheses: int = 0
    depth: int = 0
    changed: int = 0
    verdicts: Counter = field(default_factory=Counter)
    changes: list[Change] = field(default_factory=list)
    judged: bool | None = None
    stats: list[np.ndarray] = field(default_factory=list)  # each piece's [(input, rescored) 1-best, stat, utterance]
    # (in the narrowest integer type that holds the piece's counts: a million utterances' are kept to the end)
    oracle: np.ndarray | None = None  # the statistics of each piece's oracle 1-bests, summed
    ppl: dict[str, dict[str, Perplexity]] = field(default_factory=dict)
    cut: Counter = field(default_factory=Counter)  # texts whose context was cut to fit the model, by column
    seconds: float = 0.0

    def add(self, piece: NBest, scored: ScoredSet, ranks: np.ndarray, scorers: Mapping[str, BoundScorer]) -> None:
        """Count a piece: ``scored`` (its LM scores and metric statistics), re-ranked to ``ranks``."""
        self.utterances += len(piece)
        self.hypotheses += piece.num_hypotheses
        self.depth = max(self.depth, piece.depth)
        before, after = piece.select([0] * len(piece)), piece.select(ranks)
        found = changed([u.id for u in piece], before, after, [u.ref for u in piece], self.metric)
        self.changed += len(found)
        self.verdicts.update(c.verdict for c in found)
        self.changes += found[: max(self.examples - len(self.changes), 0)]
        if scored.stats is not None:  # kept: what the report needs of each utterance, not every hypothesis' own
            found, rows = scored.stats.stats, np.arange(len(piece))
            self.stats.append(compact(np.stack([found[rows, 0], found[rows, ranks]]).transpose(0, 2, 1)))
            best = found[rows, scored.stats.oracle_ranks()].sum(0)
            self.oracle = best if self.oracle is None else self.oracle + best
        for column, scorer in scorers.items():
            known = scored.scores[column]
            if scorer.context is not None:
                self.cut[column] += scorer.contexts_cut_in(known.texts)
            found_ppl = {"rescored_1best": perplexity(scorer, after, known, piece, after)}
            if self.judged:
                found_ppl["ref"] = perplexity(scorer, piece.refs(), known, piece, after)
            mine = self.ppl.setdefault(column, {})
            for kind, value in found_ppl.items():
                mine[kind] = mine[kind] + value if kind in mine else value

    def references(self, piece: NBest) -> bool:
        """Whether ``piece`` is judged against references: every utterance of the input has one, or none has."""
        if not self.judge:
            return False
        given = [u.ref is not None for u in piece]
        judged = self.judged if self.judged is not None else (given[0] if given else None)
        wrong = next((u for u, has in zip(piece, given) if has != judged), None)
        if wrong is not None:
            raise ConfigError(f"{wrong.origin or piece.source}: utterance {wrong.id!r} has "
                              f"{'no reference' if judged else 'a reference'} where earlier ones "
                              f"{'have one' if judged else 'have none'}: give every utterance a reference, or none")
        self.judged = judged
        return bool(judged)

    def entry(self, run: RunOptions) -> SetReport:
        """The input's report entry: counts and changes always; with references, baseline, rescored and oracle
        metric and the paired-bootstrap interval of the change."""
        entry = SetReport(format=self.fmt, utterances=self.utterances, hypotheses=self.hypotheses,
                          references=bool(self.stats), changed_1best=self.changed,
                          ppl={column: {kind: value.as_dict() for kind, value in found.items()}
                               for column, found in self.ppl.items()})
        if not self.stats:
            return entry
        kept, metric, scale = np.concatenate(self.stats, axis=2), self.metric, self.metric.scale
        self.stats = [kept]  # the pieces' statistics once, not twice
        before, after = (float(metric.from_stats(stats.sum(1))) for stats in kept)
        ci = resampled_change(metric, kept[0], kept[1], samples=run.bootstrap, seed=run.seed)
        entry.baseline = {metric.name: scale * before}
        entry.rescored = {metric.name: scale * after}
        entry.oracle = {metric.name: scale * float(metric.from_stats(self.oracle))}
        entry.ci95 = Interval(of=f"rescored - baseline {metric.name}", low=scale * ci["low"], high=scale * ci["high"],
                              p_better=ci["p_better"], samples=ci["samples"])
        entry.change = significance(ci["low"], ci["high"], metric.higher_is_better, self.utterances, run.bootstrap,
                                    after == before)
        entry.better, entry.worse, entry.same = (self.verdicts[v] for v in VERDICTS[:3])
        return entry


def compact(counts: np.ndarray) -> np.ndarray:
    """Counts in the narrowest integer type that holds them exactly (uint8 where all are below 256)."""
    if not counts.size:
        return counts.astype(np.uint8)
    low, high = int(counts.min()), int(counts.max())
    return counts.astype(np.min_scalar_type(high) if low >= 0 else np.result_type(np.min_scalar_type(low),
                                                                                    np.min_scalar_type(high)))


def apply_blocks(blocks: Iterable[NBest], tuned: Tuned, scorers: Mapping[str, BoundScorer], tally: Tally, *,
                 size: int, outputs: Sequence[Output] = (), known: ScoredSet | None = None) -> Tally:
    """Apply ``tuned`` (with its ``scorers``) to the utterances of ``blocks``: in pieces of at least ``size``
    (:func:`pieces`), each scored (taking the scores of ``known``, the whole input scored already, where given),
    re-ranked in order where a context reads the re-ranked 1-bests, handed to every output and counted in
    ``tally``."""
    start = time.perf_counter()
    weights = np.array([tuned.weights[c.name] for c in tuned.columns])
    first = 0  # the hypothesis of the input each piece starts at
    for piece in pieces(blocks, scorers, size):
        kept = known and ScoredSet(piece, {name: part(scored, first, first + piece.num_hypotheses)
                                           for name, scored in known.scores.items()}, known.features, None)
        first += piece.num_hypotheses
        scored = prepare(piece, scorers, tuned.base, tuned.columns, tally.metric, kept=kept,
                         judged=tally.references(piece))
        scored = in_order(piece, scored, scorers, tuned.base, tuned.columns, tally.metric, weights)
        new, ranks = rerank(scored.nbest, scored.features, weights)
        tally.add(piece, scored, ranks, scorers)
        for output in outputs:
            output(new)
        del piece, kept, scored, new  # let this piece go before the next one is read, and the reference cycles a
        gc.collect(0)  # metric library leaves (jiwer's word maps), even where the caller paused the collector
    tally.seconds += time.perf_counter() - start
    return tally


def part(scored: ScoredTexts, start: int, stop: int) -> ScoredTexts:
    """The scores of texts ``start`` to ``stop`` of ``scored``."""
    return ScoredTexts(scored.texts[start:stop], scored.totals[start:stop], scored.tokens[start:stop], scored.stats)


def apply_weights(scored: ScoredSet, weights: np.ndarray, metric: Metric, bootstrap: int = 1000,
                  seed: int = 0) -> tuple[NBest, SetReport]:
    """A list scored already, re-ranked under ``weights`` (:func:`rerank`), and its report entry."""
    new, ranks = rerank(scored.nbest, scored.features, weights)
    tally = Tally(scored.nbest.fmt, metric, EXAMPLES, judged=scored.stats is not None)
    tally.add(scored.nbest, scored, ranks, {})
    return new, tally.entry(RunOptions(bootstrap=bootstrap, seed=seed))
