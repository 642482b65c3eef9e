"""The main job: score the sets, tune the interpolation weights on dev, apply them everywhere, report.

Tuning makes a :class:`Tuned` rescorer; applying it is one path whether it was just tuned (``rescore``) or read
from ``tuned.yaml`` (``apply``): per set, the re-ranked list, what changed and, with references, baseline,
rescored and oracle WER/BLEU with the paired-bootstrap 95% interval of the change.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from ..combine import Column, Search, SearchResult, search_weights
from ..combine.heldout import half_splits
from ..engine import BoundScorer
from ..errors import ConfigError
from ..io import check_nbest, natural_base
from ..io.sets import NBestSet
from ..log import info, warning as warn
from ..metrics import Metric
from ..options import MAPPING, RunOptions
from ..types import NBest
from ..outdir import OutDir
from .applying import Collected, RunPlace, apply_inputs, run_report
from .outputs import SetPlace, checked_out_dir
from ..report import Report, SearchSummary
from .rerank import ScoredSet, prepare
from .results import Tuning, context_labels, write_run
from .retuning import AUTO, decided, plan, retuned_alone
from ..combine.scales import match_scales, search_warnings
from .scoring import check_contexts
from .stream import CHUNK
from .sets import tuning_set
from ..tuned.file import FILE, Tuned


def default_columns(scorers: Sequence[str]) -> list[Column]:
    """One tuned column per LM: the first on [0, 1] step 0.05, the others step 0.1 (Salazar et al.)."""
    return [Column(name, step=0.05 if k == 0 else 0.1, penalty="auto") for k, name in enumerate(scorers)]


def tune(dev: ScoredSet, columns: Sequence[Column], search: Search = Search()) -> SearchResult:
    """The weights of ``columns`` that do best on ``dev`` under ``search``."""
    return search_weights(search, dev.nbest, dev.features, dev.stats, columns)


@dataclass(frozen=True)
class Rescored:
    """What a rescoring run gives back: the report (:class:`Report`; ``outputs`` only when written), every set
    re-ranked under the tuned weights (column ``rescore`` added) and the tuned rescorer (``tuned.yaml``)."""

    report: Report
    nbests: Mapping[str, NBest]
    tuned: Tuned | None = None

    @property
    def weights(self) -> dict[str, float]:
        return self.report.weights

    def __repr__(self) -> str:
        """One line per set: its metric before → after and how many 1-bests changed (``.report`` has the rest)."""
        metric = self.report.metric
        sets = []
        for name, entry in self.report.sets.items():
            judged = (f"{metric} {entry.baseline[metric]:.2f} → {entry.rescored[metric]:.2f}, "
                      if entry.rescored and entry.baseline else "")
            sets.append(f"{name}: {judged}{entry.changed_1best} of {entry.utterances} 1-bests changed")
        return f"Rescored(weights={self.weights}, " + "; ".join(sets) + ")"


def rescore_loaded(sets: Mapping[str, NBest], scorers: Mapping[str, BoundScorer], metric: Metric, *,
                   base: Column | None = None, columns: Sequence[Column] | None = None, search: Search = Search(),
                   tune_on: str | None = None, run: RunOptions = RunOptions(), data: str = "data",
                   out_dir: str | Path | OutDir | None = None, retune: Sequence[str] | str | None = AUTO) -> Rescored:
    """Tune on one set (it needs references), then apply the tuned rescorer to every set as :func:`apply_tuned`
    does; also written under ``out_dir`` if given. ``base`` (weight 1) defaults to the column the format ranks by;
    ``auto`` penalties match LM columns to a per-token base; ``run.halves`` > 0 adds that many random half-splits
    of the tuning set comparing the fast and robust rules. ``retune`` names input columns (or ``all``) whose weights
    in the base are searched too (:mod:`rescorer.combine.retune`); ``auto``: all of them where that holds on the
    tuning set's own half-splits (:mod:`rescorer.pipeline.retuning`). ``out_dir`` may not hold what the run reads (the
    sets' files, the scorers' store) unless it was checked already (an :class:`OutDir`)."""
    check_sets(sets, scorers)
    target = checked_out_dir(out_dir, sets, scorers)
    dev = tuning_set([name for name, nbest in sets.items() if any(u.ref is not None for u in nbest)], tune_on,
                     list(sets))
    base = base or Column(natural_base(sets[dev]))
    mismatched = metric.mismatches(sets[dev].refs(), sets[dev].select([0] * len(sets[dev])))
    for warning in mismatched:  # before any scoring: the user may stop and fix the option
        warn(warning)
    retuning = plan(columns or default_columns(list(scorers)), sets[dev], base, retune, list(scorers))
    columns, notes = match_scales(retuning.columns, base, sets[dev], list(scorers))
    prepared = {name: prepare(nbest, scorers, base, columns, metric) for name, nbest in sets.items()}
    retuning, prepared = decided(replace(retuning, columns=columns), prepared, dev, metric, run.seed)
    columns = retuning.columns
    result = tune(prepared[dev], columns, search)
    found = search_warnings(result, columns)
    for warning in found:
        warn(warning)
    if run.halves:
        info(f"rescorer: task.halves={run.halves}: tuning on {run.halves} random halves of {dev}, judging the others")
    study = half_splits(prepared[dev].features, prepared[dev].stats, columns,
                        {"fast": Search("fast"), "robust": Search("robust")}, run.halves, run.seed) if run.halves else None
    tuned = Tuned.of(base, columns, result.weights, metric, scorers, tuned_on=dev, data=data, search=result.method,
                     dev={metric.name: metric.scale * result.dev}, lists={
                         "utterances": len(sets[dev]), "hypotheses": sets[dev].num_hypotheses, "depth": sets[dev].depth})
    summary = SearchSummary(method=result.method, settings=result.evaluated, seconds=result.seconds,
                            dev=metric.scale * result.dev,
                            dev_ci95=[metric.scale * x for x in result.dev_ci] if result.dev_ci else None)
    alone = retuned_alone(prepared, columns, result.weights, retuning.retuned, metric, dev)
    return apply_tuned(sets, tuned, scorers, place=target, metric=metric, run=run, data=data, prepared=prepared,
                       tuning=Tuning(result, summary, dev, study, context_labels(scorers)),
                       notes=notes + retuning.notes + alone, warnings=[*mismatched, *found])


def apply_tuned(sets: Mapping[str, NBest | NBestSet], tuned: Tuned, scorers: Mapping[str, BoundScorer], *,
                place: RunPlace | OutDir | None = None, metric: Metric | None = None, run: RunOptions = RunOptions(),
                data: str = "data", source: str | None = None, chunk: int = CHUNK,
                prepared: Mapping[str, ScoredSet] = {}, tuning: Tuning | None = None, notes: Sequence[str] = (),
                warnings: Sequence[str] = ()) -> Rescored:
    """Every input of ``sets`` (lists in memory, or read from their files a block at a time, ``chunk`` utterances
    scored together) re-ranked under the weights of ``tuned`` with its ``scorers``
    (:func:`~rescorer.pipeline.applying.apply_inputs`) and put where ``place`` puts them (an out_dir checked already,
    where each set is staged, :class:`~rescorer.pipeline.outputs.SetPlace`; a corpus's shards,
    :class:`~rescorer.pipeline.shards.Shards`; None: nowhere), and the report: the metric where references exist,
    the counts and changed 1-bests everywhere. ``source``: the tuned file an apply run read. A tuning run gives its
    ``metric`` (else the tuned file's), the scores ``prepared`` already and what only it reports (``tuning``)."""
    metric = metric or tuned.metric
    if place is None or isinstance(place, OutDir):
        place = SetPlace(place, with_ids=metric.name == "wer", checks_depth=tuning is None)
    with place.opened() as out:
        applied = apply_inputs(sets, tuned, scorers, metric, place, run=run, chunk=chunk, known=prepared)
        for name, found in applied.items():
            found.entry.tuned_on_this_set = tuning is not None and name == tuning.on
            if found.entry.tuned_on_this_set and found.entry.change is not None:
                found.entry.change += " (tuned here)"
        summary = place.summary(applied)
        report = run_report("rescore" if tuning else "apply", applied, tuned, scorers, metric, data, place,
                            source=source, notes=[*summary.notes, *notes], warnings=warnings,
                            **({"search": tuning.search, "halves": tuning.halves} if tuning else {}))
        if out is not None:
            how = f"tuned on {tuning.on}" if tuning else f"from {source or 'a tuned rescorer'}"
            title = (f"{data}: {summary.counted}{'rescored' if tuning else 're-ranked'} with "
                     f"{weights_text(tuned.weights)} ({how})")
            write_run(out, report, {name: a.changes for name, a in applied.items()}, metric, title,
                      tuned.to_yaml(out.final / FILE), tuning, summary.outputs, summary.shown)
    return Rescored(report, RerankedSets(sets, prepared, tuned, scorers, metric), tuned)


class RerankedSets(Mapping[str, NBest]):
    """Each set's re-ranked list by name, made on first access (from the scores at hand) and kept."""

    def __init__(self, sets: Mapping[str, NBest | NBestSet], prepared: Mapping[str, ScoredSet], tuned: Tuned,
                 scorers: Mapping[str, BoundScorer], metric: Metric):
        self._sets, self._prepared, self._tuned, self._scorers, self._metric = sets, prepared, tuned, scorers, metric
        self._made: dict[str, NBest] = {}

    def __getitem__(self, name: str) -> NBest:
        if name not in self._made:
            place = Collected()
            apply_inputs({name: self._sets[name]}, self._tuned, self._scorers, self._metric, place,
                         known={name: self._prepared[name]} if name in self._prepared else {})
            self._made[name] = place.nbest
        return self._made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._sets)

    def __len__(self) -> int:
        return len(self._sets)

    def __repr__(self) -> str:
        return f"RerankedSets({', '.join(self._sets)})"


def check_sets(sets: Mapping[str, NBest], scorers: Mapping[str, BoundScorer]) -> None:
    """Refuse sets that are not NBests, sets without utterances and contexts the scorers cannot read."""
    for name, nbest in MAPPING.check("sets", sets).items():
        check_nbest(nbest, f"sets[{name!r}]")
    empty = [name for name, nbest in sets.items() if not len(nbest)]
    if empty:
        raise ConfigError(f"set(s) {empty} have no utterances (check the file and every/start/stop/top)")
    check_contexts(sets, scorers)


def weights_text(weights: Mapping[str, float]) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in weights.items()) or "none"
