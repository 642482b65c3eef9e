"""Applying a tuned rescorer to named inputs, one after the other: each read a block at a time, scored, re-ranked
and written by :func:`~rescorer.pipeline.stream.apply_blocks`, where its run puts it (a :class:`Place`). Every
apply goes this way — the sets of ``task=rescore`` and ``task=apply``, a corpus's shards, the Python API — whether
its outputs are staged and put in place whole (a run's sets) or kept input by input and resumed (a sharded job)."""
from __future__ import annotations

import contextlib
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ContextManager, Iterator, Mapping, Protocol, Sequence

from ..bulk import paused_gc
from ..changes import Change
from ..engine import BoundScorer
from ..io.sets import NBestSet
from ..log import warning as warn
from ..metrics import Metric
from ..options import RunOptions
from ..outdir import RunDir
from ..report import Report, SetReport
from ..types import NBest
from .rerank import ScoredSet
from .scoring import context_notes
from .stream import CHUNK, Output, Tally, apply_blocks, set_blocks
from ..tuned.file import Tuned


@dataclass(frozen=True)
class Applied:
    """One input applied: its report entry, its first changed 1-bests, the seconds it took, the most hypotheses of
    an utterance and, by column, the texts whose context was cut to fit the model."""

    entry: SetReport
    changes: list[Change]
    seconds: float
    depth: int
    cut: dict[str, int] = field(default_factory=dict)


class Place(Protocol):
    """Where a run's inputs go: what it keeps of each (``examples`` changed 1-bests; ``judge``: whether an input
    with references is judged against them), what it calls them in messages (``kind``), whether their depth is
    checked against the tuning lists' (``checks_depth``), an input finished by an earlier run (``kept``), the
    writers of an input's re-ranked pieces with where each file goes (``outputs``), and what follows an input once
    it is applied (``done``)."""

    kind: str
    examples: int
    judge: bool
    checks_depth: bool

    def kept(self, name: str) -> Applied | None: ...

    def outputs(self, name: str, like: NBest) -> ContextManager[tuple[list[Output], dict[str, str]]]: ...

    def done(self, name: str, applied: Applied) -> None: ...


@dataclass(frozen=True)
class Summary:
    """What a run's report says of where its inputs went: ``notes``, what was applied (``counted``: ``3 shards``;
    empty for sets, named one by one), where the outputs are (``outputs``; None: the sets' own line) and how many
    inputs the terminal shows (``shown``; None: all)."""

    notes: list[str] = field(default_factory=list)
    counted: str = ""
    outputs: str | None = None
    shown: int | None = None


class RunPlace(Place, Protocol):
    """The place of a whole run: also where the run's own files go (``opened``: the run's directory, None where
    nothing is written) and what its report says of the inputs once all are applied (``summary``)."""

    def opened(self) -> ContextManager[RunDir | None]: ...

    def summary(self, applied: Mapping[str, Applied]) -> Summary: ...


class Collected:
    """A place that keeps the re-ranked list of the input it is given in memory (``nbest``), writing nothing and
    judging nothing."""

    kind, examples, judge, checks_depth = "set", 0, False, False

    def __init__(self) -> None:
        self.nbest: NBest | None = None

    def kept(self, name: str) -> None:
        return None

    @contextlib.contextmanager
    def outputs(self, name: str, like: NBest) -> Iterator[tuple[list[Output], dict[str, str]]]:
        pieces: list[NBest] = []
        yield [pieces.append], {}
        self.nbest = like.with_utterances([u for piece in pieces for u in piece.utterances])

    def done(self, name: str, applied: Applied) -> None:
        pass


def apply_inputs(inputs: Mapping[str, NBest | NBestSet], tuned: Tuned, scorers: Mapping[str, BoundScorer],
                 metric: Metric, place: Place, *, run: RunOptions = RunOptions(), chunk: int = CHUNK,
                 known: Mapping[str, ScoredSet] = {}) -> dict[str, Applied]:
    """Each input (by name) applied in turn (taking the scores ``known`` of an input scored whole already, where
    given), unless ``place`` kept it from an earlier run; a depth unlike the tuning lists' is warned of as it is
    first met."""
    applied: dict[str, Applied] = {}
    for name, source in inputs.items():
        found = place.kept(name)
        if found is None:
            with paused_gc():  # many small objects: the re-ranked pieces
                found = apply_input(name, source, tuned, scorers, metric, place, run, chunk, known.get(name))
            if place.checks_depth and all(a.depth != found.depth for a in applied.values()):  # each depth said once
                for line in depth_warnings({name: found.depth}, tuned, place.kind):
                    warn(line)
            place.done(name, found)
        applied[name] = found
    return applied


def apply_input(name: str, source: NBest | NBestSet, tuned: Tuned, scorers: Mapping[str, BoundScorer],
                metric: Metric, place: Place, run: RunOptions, chunk: int, known: ScoredSet | None) -> Applied:
    """One input read, applied and written where ``place`` puts it, and what it held."""
    start = time.perf_counter()
    like, blocks = set_blocks(source)
    tally = Tally(like.fmt, metric, place.examples, judge=place.judge)
    with place.outputs(name, like) as (outputs, written):
        apply_blocks(blocks, tuned, scorers, tally, size=chunk, known=known, outputs=outputs)
    entry = tally.entry(run)
    entry.outputs = written or None
    return Applied(entry, tally.changes, time.perf_counter() - start, tally.depth, dict(tally.cut))


def depth_warnings(depths: Mapping[str, int], tuned: Tuned, kind: str) -> list[str]:
    """A line for each depth of the inputs (``{name: its depth}``, ``kind``: what they are) deeper or shallower
    than the lists the weights were tuned on, naming the inputs of that depth."""
    depth = tuned.lists.get("depth")
    by_depth: dict[int, list[str]] = {}
    for name, found in depths.items():
        if depth and found != depth:
            by_depth.setdefault(found, []).append(name)
    return [f"{label(names, kind)}: {found}-best lists, but the weights were tuned on {depth}-best lists "
            f"({tuned.tuned_on}): weights may not carry over to another depth (cut the lists with top={depth}, or "
            "re-tune on lists like these)" for found, names in by_depth.items()]


def label(names: list[str], kind: str) -> str:
    """``set test``, or ``3 shards (a, b, c)`` (the first three named)."""
    if len(names) == 1:
        return f"{kind} {names[0]}"
    return f"{len(names)} {kind}s ({', '.join(names[:3])}{', …' if len(names) > 3 else ''})"


def run_report(task: str, applied: Mapping[str, Applied], tuned: Tuned, scorers: Mapping[str, BoundScorer],
               metric: Metric, data: str, place: Place, *, source: str | None = None, notes: Sequence[str] = (),
               warnings: Sequence[str] = (), **more: Any) -> Report:
    """The report of a run that applied ``tuned`` (``source``: the file it was read from) to every input of
    ``place``: a row per input, the ``notes`` and ``warnings`` given, the contexts cut to fit a model and each depth
    unlike the tuning lists' (where the place checks it); ``more``: what only some runs report (the search)."""
    cut = sum((Counter(a.cut) for a in applied.values()), Counter())
    depths = depth_warnings({name: a.depth for name, a in applied.items()}, tuned, place.kind) \
        if place.checks_depth else []
    return Report.of(task=task, data=data, metric=metric, base=tuned.base, columns=tuned.columns,
                     weights=tuned.weights, method=tuned.search, tuned_on=tuned.tuned_on,
                     scorers={column: scorer.signature for column, scorer in scorers.items()},
                     sets={name: a.entry for name, a in applied.items()}, tuned=source,
                     notes=[*notes, *context_notes(scorers, cut)], warnings=[*warnings, *depths], **more)
