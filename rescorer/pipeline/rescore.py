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
from ..combine.heldout import half_splits
from ..combine.interpolate import best_ranks
from ..engine import BoundScorer, ScoredTexts
from ..errors import ConfigError
from ..metrics import Metric, NBestStats, paired_bootstrap
from ..plots import weight_plot
from ..report import write_report
from ..types import NBest
from ..version import __version__
from .outputs import RunDir, run_dir, write_1best, write_scored
from .scoring import score_nbest, set_perplexities
from .sets import tuning_set

RESCORE_COLUMN = "rescore"


@dataclass(frozen=True)
class ScoredSet:
    """One set ready to tune and apply: the list with LM columns, its LM scores, features and metric statistics."""

    nbest: NBest
    scores: Mapping[str, ScoredTexts]
    features: Features
    stats: NBestStats


def default_columns(scorers: Sequence[str]) -> list[Column]:
    """One tuned column per LM: the first on [0, 1] step 0.05, the others step 0.1 (Salazar et al.)."""
    return [Column(name, step=0.05 if k == 0 else 0.1) for k, name in enumerate(scorers)]


def prepare(nbest: NBest, scorers: Mapping[str, BoundScorer], base: Column, columns: Sequence[Column],
            metric: Metric) -> ScoredSet:
    """Score ``nbest`` with every LM and gather what tuning and applying need."""
    scored, scores = score_nbest(nbest, scorers)
    token_counts = {name: [len(t) for t in s.tokens] for name, s in scores.items()}
    values = {name: np.asarray(s.totals, dtype=float) for name, s in scores.items()}
    return ScoredSet(scored, scores, Features.of(scored, base, columns, token_counts, values),
                     NBestStats.compute(scored, metric))


def tune(dev: ScoredSet, columns: Sequence[Column], search: Mapping[str, Any] | None = None) -> SearchResult:
    """The weights of ``columns`` that do best on ``dev`` (``search``: ``{name: fast|grid, …options}``)."""
    options = dict(search or {"name": "fast"})
    method = options.pop("name", "fast")
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


def apply(scored: ScoredSet, weights: np.ndarray, metric: Metric, bootstrap: int = 1000,
          seed: int = 0) -> tuple[NBest, dict[str, Any]]:
    """The re-ranked list under ``weights`` and its metrics: baseline, rescored, oracle, paired-bootstrap CI."""
    stats, scale = scored.stats, metric.scale
    ranks, base_ranks = best_ranks(scored.features, weights), stats.baseline_ranks()
    ci = paired_bootstrap(stats, base_ranks, ranks, samples=bootstrap, seed=seed)
    entry = {
        "format": scored.nbest.fmt, "utterances": len(scored.nbest), "hypotheses": scored.nbest.num_hypotheses,
        "baseline": {metric.name: scale * stats.score(base_ranks)},
        "rescored": {metric.name: scale * stats.score(ranks)},
        "oracle": {metric.name: scale * stats.score(stats.oracle_ranks())},
        "ci95": {"of": f"rescored - baseline {metric.name}", "low": scale * ci["low"], "high": scale * ci["high"],
                 "p_better": ci["p_better"], "samples": ci["samples"]},
        "changed_1best": int((ranks != base_ranks).sum()),
        "change": significance(ci["low"], ci["high"], metric.higher_is_better),
    }
    return reranked(scored.nbest, scored.features, weights), entry


def significance(low: float, high: float, higher_is_better: bool) -> str:
    """The change in plain words from its 95% interval: significant only when the interval excludes 0."""
    if low <= 0 <= high:
        return "no significant change" if (low, high) != (0, 0) else "unchanged"
    return "significantly " + ("better" if (low > 0) == higher_is_better else "worse")


@dataclass(frozen=True)
class Rescored:
    """What a rescoring run gives back: the report (schema in README; ``outputs`` only when written) and every
    set re-ranked under the tuned weights (column ``rescore`` added)."""

    report: dict[str, Any]
    nbests: dict[str, NBest]

    @property
    def weights(self) -> dict[str, float]:
        return self.report["weights"]


def rescore_lists(sets: Mapping[str, NBest], scorers: Mapping[str, BoundScorer], metric: Metric, base: Column,
                  columns: Sequence[Column] | None = None, search: Mapping[str, Any] | None = None,
                  tune_on: str | None = None, bootstrap: int = 1000, seed: int = 0, data: str = "data",
                  out_dir: str | Path | None = None, halves: int = 0) -> Rescored:
    """Tune on one set, apply to all; the report and the re-ranked sets, also written under ``out_dir`` if given
    (``halves`` > 0 adds that many random half-splits of the tuning set comparing the fast and robust rules)."""
    columns = list(columns) if columns else default_columns(list(scorers))
    dev = tuning_set(list(sets), tune_on)
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, int) or bootstrap < 1:
        raise ConfigError(f"task.bootstrap must be a positive number of resamples, not {bootstrap!r}")
    empty = [name for name, nbest in sets.items() if not len(nbest)]
    if empty:
        raise ConfigError(f"set(s) {empty} have no utterances (check the file and every/start/stop/top)")
    prepared = {name: prepare(nbest, scorers, base, columns, metric) for name, nbest in sets.items()}
    result = tune(prepared[dev], columns, search)
    weights = np.array([result.weights[c.name] for c in columns])
    applied = {}
    for name, scored in prepared.items():
        new, entry = apply(scored, weights, metric, bootstrap, seed)
        entry["tuned_on_this_set"] = name == dev
        if name == dev:
            entry["change"] += " (tuned here)"
        entry["ppl"] = {column: set_perplexities(new, scorer, scored.scores[column], "rescored_1best")
                        for column, scorer in scorers.items()}
        applied[name] = (new, entry)
    study = half_splits(prepared[dev].features, prepared[dev].stats, columns,
                        {"fast": {"name": "fast"}, "robust": {"name": "robust"}}, halves, seed) if halves else None
    nbests = {name: new for name, (new, _) in applied.items()}
    if out_dir is None:
        entries = {name: entry for name, (_, entry) in applied.items()}
        report = rescore_report(result, columns, scorers, metric, base, dev, data, entries, None)
        return Rescored({**report, "halves": study}, nbests)
    with run_dir(out_dir) as out:
        entries = {name: {**entry, "outputs": write_rescored(new, out, name, metric)}
                   for name, (new, entry) in applied.items()}
        plot = weight_plot(result, [c.name for c in columns], metric, out.work / f"weights_{dev}.png")
        report = rescore_report(result, columns, scorers, metric, base, dev, data, entries,
                                out.shown(plot) if plot else None)
        report["halves"] = study
        table = ["utterances", f"baseline.{metric.name}", f"rescored.{metric.name}", f"oracle.{metric.name}",
                 "ci95.low", "ci95.high", "change"]
        weights_text = ", ".join(f"{k}={v:g}" for k, v in result.weights.items()) or "none"
        write_report(out.work, report, table, f"{data}: rescored with {weights_text} (tuned on {dev})")
    return Rescored(report, nbests)


def rescore(sets: Mapping[str, NBest], scorers: Mapping[str, BoundScorer], metric: Metric, out_dir: str | Path,
            base: Column, columns: Sequence[Column] | None = None, search: Mapping[str, Any] | None = None,
            tune_on: str | None = None, bootstrap: int = 1000, seed: int = 0, data: str = "data",
            halves: int = 0) -> dict[str, Any]:
    """Tune on one set, apply to all, write the outputs under ``out_dir`` and return the report (``task=rescore``)."""
    return rescore_lists(sets, scorers, metric, base, columns, search, tune_on, bootstrap, seed, data, out_dir,
                         halves).report


def write_rescored(nbest: NBest, out: RunDir, name: str, metric: Metric) -> dict[str, str]:
    """The re-ranked set in its format, as JSONL and as 1-best text (with ids for ASR); where each will be."""
    written = {**write_scored(nbest, out.work, name), "1best": out.work / name / "1best.txt"}
    write_1best(nbest, written["1best"], with_ids=metric.name == "wer")
    return {kind: out.shown(path) for kind, path in written.items()}


def rescore_report(result: SearchResult, columns: Sequence[Column], scorers: Mapping[str, BoundScorer],
                   metric: Metric, base: Column, dev: str, data: str, entries: dict[str, Any],
                   plot: str | None) -> dict[str, Any]:
    """``report.json`` of a rescoring run (schema in README)."""
    signature = "|".join([f"rescorer:{__version__}", metric.signature, f"base:{base.name}",
                          *(f"{c.name}:{result.weights[c.name]:g}/lp:{c.penalty}" for c in columns),
                          f"search:{result.method}"])
    return {
        "task": "rescore", "data": data, "metric": metric.name, "units": metric.units,
        "tuned_on": dev, "base": base.name, "weights": result.weights,
        "search": {"method": result.method, "settings": result.evaluated, "seconds": result.seconds,
                   "dev": metric.scale * result.dev, "plot": plot,
                   "dev_ci95": [metric.scale * x for x in result.dev_ci] if result.dev_ci else None},
        "scorers": {column: scorer.signature for column, scorer in scorers.items()},
        "signature": signature, "sets": entries,
    }
