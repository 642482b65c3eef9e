"""The main job: score the sets, tune the interpolation weights on dev, apply them everywhere, report.

Per set: baseline (input 1-best), rescored and oracle WER/BLEU, a paired-bootstrap 95% interval of the
improvement, (P)PPL of the references and the rescored 1-best under each LM; the rescored lists are written
back in their own format (hypotheses re-ranked, column ``rescore`` added), as 1-best text and as canonical
JSONL; a PNG shows the dev metric against the weights.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..combine import Column, Features, SearchResult, search_weights, totals
from ..combine.rules import search_options
from ..combine.heldout import half_splits
from ..combine.interpolate import best_ranks
from ..context import Context
from ..engine import BoundScorer, ScoredTexts
from ..errors import ConfigError, short_repr
from ..metrics import Metric, NBestStats, paired_bootstrap
from ..options import MAPPING, RUN, checked
from ..plots import unplotted, weight_plot
from ..report import write_report
from ..types import NBest
from ..version import TOOL, signature as signed
from ..changes import Change, changed
from ..html_report import write_html
from ..io import check_nbest, natural_base
from ..files import write_text
from ..log import warning as warn
from ..safetext import visible
from ..summary import summary
from .scales import match_scales, search_warnings
from .reports import Interval, Report, SearchSummary, SetReport
from .outputs import (ONE_BEST, OutDir, RunDir, checked_out_dir, run_dir, write_1best, write_scored,
                      write_toolkit_1best)
from .scoring import check_contexts, context_notes, reranking, score_nbest, set_perplexities
from .sets import tuning_set
from .tuned import FILE as TUNED_FILE, Tuned

RESCORE_COLUMN = "rescore"


@dataclass(frozen=True)
class ScoredSet:
    """One set ready to tune and apply: the list with LM columns, its LM scores, features and metric statistics."""

    nbest: NBest
    scores: Mapping[str, ScoredTexts]
    features: Features
    stats: NBestStats | None  # None for a list without references


def default_columns(scorers: Sequence[str]) -> list[Column]:
    """One tuned column per LM: the first on [0, 1] step 0.05, the others step 0.1 (Salazar et al.)."""
    return [Column(name, step=0.05 if k == 0 else 0.1, penalty="auto") for k, name in enumerate(scorers)]


def prepare(nbest: NBest, scorers: Mapping[str, BoundScorer], base: Column, columns: Sequence[Column],
            metric: Metric, firsts: Sequence[str] | None = None, kept: ScoredSet | None = None) -> ScoredSet:
    """Score ``nbest`` with every LM and gather what tuning and applying need (metric statistics only for a list
    with references). Given a ``kept`` set, only the LMs whose context reads the re-ranked 1-bests ``firsts``
    score again."""
    again = reranking(scorers)
    scored, scores = score_nbest(nbest, scorers, firsts, kept and {n: s for n, s in kept.scores.items()
                                                                   if n not in again})
    token_counts = {name: [len(t) for t in s.tokens] for name, s in scores.items()}
    values = {name: np.asarray(s.totals, dtype=float) for name, s in scores.items()}
    stats = kept.stats if kept else (NBestStats.compute(scored, metric) if any(u.ref is not None for u in nbest)
                                     else None)
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


def search_rule(search: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """The rule ``search`` names (``{name: fast|grid|robust, …options}``; None: fast) and its options, checked."""
    if search is not None and not isinstance(search, Mapping):
        raise ConfigError(f"search must be fast, grid, robust or a mapping {{name: fast|grid|robust, …options}}, "
                          f"not {short_repr(search)}")
    options = dict(search or {"name": "fast"})
    method = options.pop("name", "fast")
    return method, search_options(method, options)


def tune(dev: ScoredSet, columns: Sequence[Column], search: Mapping[str, Any] | None = None) -> SearchResult:
    """The weights of ``columns`` that do best on ``dev`` (``search``: ``{name: fast|grid|robust, …options}``)."""
    method, options = search_rule(search)
    return search_weights(method, dev.nbest, dev.features, dev.stats, columns, **options)


def reranked(nbest: NBest, features: Features, weights: np.ndarray) -> NBest:
    """Hypotheses sorted by their interpolated total (stable: ties keep the toolkit's order), with a column for it."""
    scores = totals(features, weights)
    utterances = []
    for u, utt in enumerate(nbest):
        order = sorted(range(len(utt.hyps)), key=lambda k: -scores[u, k])
        hyps = [utt.hyps[k].with_scores(**{RESCORE_COLUMN: float(scores[u, k])}) for k in order]
        utterances.append(replace(utt, hyps=tuple(hyps)))
    return nbest.with_utterances(utterances)


def apply_weights(scored: ScoredSet, weights: np.ndarray, metric: Metric, bootstrap: int = 1000,
                  seed: int = 0) -> tuple[NBest, SetReport]:
    """The re-ranked list under ``weights`` and what changed: with references, baseline, rescored and oracle
    metric and the paired-bootstrap CI of the change; without, the counts."""
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
    return reranked(scored.nbest, scored.features, weights), entry


MIN_UTTERANCES, MIN_SAMPLES = 30, 1000  # below either, no interval is called significant


def significance(low: float, high: float, higher_is_better: bool, utterances: int | None = None,
                 samples: int | None = None, equal: bool = False) -> str:
    """The change in plain words from its 95% interval: significant only when the interval excludes 0, from at
    least 30 utterances and 1,000 resamples; equal results are "unchanged", never better."""
    if equal or (low, high) == (0, 0):
        return "unchanged"
    if utterances is not None and utterances < MIN_UTTERANCES:
        return f"too few utterances to tell ({utterances} < {MIN_UTTERANCES})"
    if samples is not None and samples < MIN_SAMPLES:
        return f"too few resamples to tell (task.bootstrap={samples} < {MIN_SAMPLES})"
    if low <= 0 <= high:
        return "no significant change"
    return "significantly " + ("better" if (low > 0) == higher_is_better else "worse")


@dataclass(frozen=True)
class Rescored:
    """What a rescoring run gives back: the report (:class:`Report`; ``outputs`` only when written), every set
    re-ranked under the tuned weights (column ``rescore`` added) and the tuned rescorer (``tuned.yaml``)."""

    report: Report
    nbests: dict[str, NBest]
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


def rescore_loaded(sets: Mapping[str, NBest], scorers: Mapping[str, BoundScorer], metric: Metric,
                  base: Column | None = None, columns: Sequence[Column] | None = None,
                  search: Mapping[str, Any] | None = None, tune_on: str | None = None, bootstrap: int = 1000,
                  seed: int = 0, data: str = "data", out_dir: str | Path | OutDir | None = None,
                  halves: int = 0) -> Rescored:
    """Tune on one set (it needs references), apply to all; the report, the re-ranked sets and the tuned rescorer,
    also written under ``out_dir`` if given. ``base`` (weight 1) defaults to the column the format ranks by;
    ``auto`` penalties match LM columns to a per-token base; ``halves`` > 0 adds that many random half-splits of
    the tuning set comparing the fast and robust rules. ``out_dir`` may not hold what the run reads (the sets'
    files, the scorers' store) unless it was checked already (an :class:`OutDir`)."""
    check_run(sets, bootstrap=bootstrap, seed=seed, halves=halves)
    check_contexts(sets, scorers)
    search_rule(search)
    target = checked_out_dir(out_dir, sets, scorers)
    dev = tuning_set([name for name, nbest in sets.items() if any(u.ref is not None for u in nbest)], tune_on,
                     list(sets))
    base = base or Column(natural_base(sets[dev]))
    mismatched = metric.mismatches(sets[dev].refs(), sets[dev].select([0] * len(sets[dev])))
    for warning in mismatched:  # before any scoring: the user may stop and fix the option
        warn(visible(warning))
    columns, notes = match_scales(list(columns) if columns else default_columns(list(scorers)), base, sets[dev],
                                  list(scorers))
    prepared = {name: prepare(nbest, scorers, base, columns, metric) for name, nbest in sets.items()}
    result = tune(prepared[dev], columns, search)
    found = search_warnings(result, columns)
    for warning in found:
        warn(visible(warning))
    warnings = [*mismatched, *found]
    weights = np.array([result.weights[c.name] for c in columns])
    study = half_splits(prepared[dev].features, prepared[dev].stats, columns,
                        {"fast": {"name": "fast"}, "robust": {"name": "robust"}}, halves, seed) if halves else None
    prepared = {name: in_order(sets[name], scored, scorers, base, columns, metric, weights)
                for name, scored in prepared.items()}
    tuned = Tuned.of(base, columns, result.weights, metric, scorers, tuned_on=dev, data=data, search=result.method,
                     dev={metric.name: metric.scale * result.dev})
    applied = apply_all(prepared, weights, metric, scorers, bootstrap, seed, dev)
    report = rescore_report(result, columns, scorers, metric, base, dev, data, applied)
    report.halves, report.notes, report.warnings = study, notes + context_notes(scorers, sets), warnings
    title = f"{data}: rescored with {weights_text(result.weights)} (tuned on {dev})"
    return finish(report, applied, metric, tuned, target, title, result)


def apply_tuned(sets: Mapping[str, NBest], tuned: Tuned, scorers: Mapping[str, BoundScorer], bootstrap: int = 1000,
                seed: int = 0, data: str = "data", out_dir: str | Path | OutDir | None = None,
                source: str | None = None) -> Rescored:
    """Score ``sets`` with ``scorers`` (those of ``tuned``), re-rank them with its weights and report: the metric
    where references exist, the counts and changed 1-bests everywhere. ``out_dir`` may not hold what the run reads
    (the sets' files, ``source``: the tuned rescorer, the scorers' store) unless it was checked already."""
    check_run(sets, bootstrap=bootstrap, seed=seed)
    check_contexts(sets, scorers)
    target = checked_out_dir(out_dir, sets, scorers, [source])
    metric = tuned.make_metric()
    prepared = {name: prepare(nbest, scorers, tuned.base, tuned.columns, metric) for name, nbest in sets.items()}
    weights = np.array([tuned.weights[c.name] for c in tuned.columns])
    prepared = {name: in_order(sets[name], scored, scorers, tuned.base, tuned.columns, metric, weights)
                for name, scored in prepared.items()}
    applied = apply_all(prepared, weights, metric, scorers, bootstrap, seed, None)
    report = Report(task="apply", data=data, metric=metric.name, units=metric.units, tuned=source,
                    tuned_on=tuned.tuned_on, base=tuned.base.name, weights=dict(tuned.weights),
                    scorers={column: scorer.signature for column, scorer in scorers.items()},
                    signature=signature(metric, tuned.base, tuned.columns, tuned.weights, tuned.search),
                    sets={name: a.entry for name, a in applied.items()},
                    penalties={c.name: c.penalty for c in tuned.columns}, notes=context_notes(scorers, sets))
    title = f"{data}: re-ranked with {weights_text(tuned.weights)} (from {source or 'a tuned rescorer'})"
    return finish(report, applied, metric, tuned, target, title, None)


def check_run(sets: Mapping[str, NBest], **options: Any) -> None:
    """Refuse run ``options`` (:data:`RUN`) of the wrong kind or out of range, sets that are not NBests and sets
    without utterances."""
    checked("", options, RUN)
    for name, nbest in MAPPING.check("sets", sets).items():
        check_nbest(nbest, f"sets[{name!r}]")
    empty = [name for name, nbest in sets.items() if not len(nbest)]
    if empty:
        raise ConfigError(f"set(s) {empty} have no utterances (check the file and every/start/stop/top)")


@dataclass(frozen=True)
class Applied:
    """One set after re-ranking: the list, its report entry and its changed 1-bests."""

    nbest: NBest
    entry: SetReport
    changes: list[Change]


def apply_all(prepared: Mapping[str, ScoredSet], weights: np.ndarray, metric: Metric,
              scorers: Mapping[str, BoundScorer], bootstrap: int, seed: int, dev: str | None) -> dict[str, Applied]:
    """Every set re-ranked under ``weights`` with its report entry ((P)PPL per LM, changed 1-bests judged
    against the references where there are some)."""
    applied = {}
    for name, scored in prepared.items():
        new, entry = apply_weights(scored, weights, metric, bootstrap, seed)
        old = scored.nbest
        changes = changed([u.id for u in old], old.select([0] * len(old)), new.select([0] * len(new)),
                          [u.ref for u in old], metric)
        if scored.stats is not None:
            entry.better, entry.worse, entry.same = (sum(c.verdict == verdict for c in changes)
                                                     for verdict in ("better", "worse", "same"))
        entry.tuned_on_this_set = name == dev
        if name == dev:
            entry.change += " (tuned here)"
        entry.ppl = {column: set_perplexities(old, scorer, scored.scores[column], "rescored_1best",
                                              new.select([0] * len(new)))
                     for column, scorer in scorers.items()}
        applied[name] = Applied(new, entry, changes)
    return applied


def finish(report: Report, applied: Mapping[str, Applied], metric: Metric, tuned: Tuned,
           out_dir: OutDir | None, title: str, result: SearchResult | None) -> Rescored:
    """The run's result; with ``out_dir``, every set's outputs, ``tuned.yaml``, the weight plot and the reports
    (``report.json``, ``report.md``, ``report.html``) written there together (all or nothing)."""
    nbests = {name: a.nbest for name, a in applied.items()}
    if out_dir is None:
        return Rescored(report, nbests, tuned)
    changes = {name: a.changes for name, a in applied.items()}
    with run_dir(out_dir) as out:
        for name, a in applied.items():
            a.entry.outputs = write_rescored(a.nbest, out, name, metric)
        plot = None
        if result is not None and report.search is not None:
            names = [c.name for c in tuned.columns]
            plot = weight_plot(result, names, metric, out.path(f"weights_{tuned.tuned_on}.png"), context_labels(tuned))
            report.search.plot, report.search.plot_note = out.shown(plot) if plot else None, unplotted(result, names)
        write_text(out.work / TUNED_FILE, tuned.to_yaml(out.final / TUNED_FILE))
        report.tuned_file = str(out.final / TUNED_FILE)
        report.html = str(out.final / "report.html")
        written = report.to_json()
        write_html(out.work / "report.html", written, changes, plot.read_bytes() if plot else None)
        name = metric.name.upper()
        table = [("utterances", "utterances"), (f"baseline.{metric.name}", f"{name} before"),
                 (f"rescored.{metric.name}", f"{name} after"), (f"oracle.{metric.name}", "best possible (oracle)"),
                 ("ci95.low", "95% CI low"), ("ci95.high", "95% CI high"), ("changed_1best", "1-bests changed")]
        write_report(out.work, written, table, title, notes=summary(written, changes, str(out.final),
                                                                    report.tuned_file if result else None))
    return Rescored(report, nbests, tuned)


def context_labels(tuned: Tuned) -> dict[str, str]:
    """Plot labels of the columns whose scorer reads a context: the column and how many utterances it reads."""
    labels = {}
    for name, entry in tuned.scorers.items():
        context = Context.of((entry.get("spec") or {}).get("context"))
        if context is not None:
            labels[name] = f"{name} (previous {context.utterances} utterances)"
    return labels


def weights_text(weights: Mapping[str, float]) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in weights.items()) or "none"


def signature(metric: Metric, base: Column, columns: Sequence[Column], weights: Mapping[str, float],
              search: str) -> str:
    """How a re-ranking was made, sacrebleu-style: tool version, metric, base, each weight and penalty, search."""
    return signed(TOOL, metric.signature, f"base:{base.name}",
                  *(f"{c.name}:{weights[c.name]:g}/lp:{c.penalty}" for c in columns), f"search:{search}")


def write_rescored(nbest: NBest, out: RunDir, name: str, metric: Metric) -> dict[str, str]:
    """The re-ranked set in its format, as JSONL and as 1-best text (with ids for ASR); where each will be."""
    written = {**write_scored(nbest, out, name), "1best": out.path(name, ONE_BEST)}
    write_1best(nbest, written["1best"], with_ids=metric.name == "wer")
    toolkit = write_toolkit_1best(nbest, out.path(name))
    if toolkit is not None:
        written["toolkit_1best"] = toolkit
    return {kind: out.shown(path) for kind, path in written.items()}


def rescore_report(result: SearchResult, columns: Sequence[Column], scorers: Mapping[str, BoundScorer],
                   metric: Metric, base: Column, dev: str, data: str,
                   applied: Mapping[str, Applied]) -> Report:
    """The report of a tuning run."""
    search = SearchSummary(method=result.method, settings=result.evaluated, seconds=result.seconds,
                           dev=metric.scale * result.dev,
                           dev_ci95=[metric.scale * x for x in result.dev_ci] if result.dev_ci else None)
    return Report(task="rescore", data=data, metric=metric.name, units=metric.units, tuned_on=dev, base=base.name,
                  weights=result.weights, search=search,
                  scorers={column: scorer.signature for column, scorer in scorers.items()},
                  signature=signature(metric, base, columns, result.weights, result.method),
                  sets={name: a.entry for name, a in applied.items()},
                  penalties={c.name: c.penalty for c in columns})
