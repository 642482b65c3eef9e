"""The report of a rescoring run (``task=rescore``, ``task=apply``, ``rescorer.rescore``, ``rescorer.apply``)
as types: ``report.json`` is :meth:`Report.to_json` of one, and :meth:`Report.from_json` reads it back.

Metric values are keyed by the metric's name (``{"wer": 4.6}``) and given on its reported scale (WER in %,
BLEU 0–100)."""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping, Optional, Sequence

from ..combine import Column
from ..errors import ConfigError
from ..metrics import Metric
from ..options import typed
from ..version import TOOL, signature as signed


def omitted_if_none(default: Any = None) -> Any:
    """A field that ``report.json`` leaves out while it is None (it does not apply to this run or set)."""
    return field(default=default, metadata={"omit": True})


class Record:
    """A dataclass read from and written to JSON: nested records and ``{name: record}`` mappings included."""

    def to_json(self) -> dict[str, Any]:
        out = {}
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if value is None and f.metadata.get("omit"):
                continue
            out[f.name] = as_json(value)
        return out

    @classmethod
    def from_json(cls, data: Any) -> Any:
        """The record ``data`` holds, checked against the type hints (nested records included; keys it does not
        define, such as ``non_finite``, are passed over); a value of the wrong type is one line naming its path."""
        try:
            return typed(data, cls)
        except ConfigError as err:
            raise ConfigError(f"a {cls.__name__}: {err}") from None


def as_json(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, Mapping):
        return {key: as_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_json(item) for item in value]
    return value


@dataclass(kw_only=True)
class Interval(Record):
    """The paired-bootstrap 95% interval of rescored − baseline over utterances."""

    of: str
    """What the interval is of, e.g. ``rescored - baseline wer``."""
    low: float
    high: float
    p_better: float
    """The share of resamples in which the rescored 1-bests did better."""
    samples: int
    """Bootstrap resamples."""


@dataclass(kw_only=True)
class SetReport(Record):
    """One set after re-ranking (``sets.<name>`` of ``report.json``). The metric fields, ``ci95``, ``change``,
    ``better``, ``worse`` and ``same`` are there only where the set has references."""

    format: str
    utterances: int
    hypotheses: int
    references: bool
    changed_1best: int
    """Utterances whose 1-best text changed."""
    baseline: Optional[dict[str, Optional[float]]] = omitted_if_none()
    """``{metric: value}`` of the input (toolkit's) 1-best."""
    rescored: Optional[dict[str, Optional[float]]] = omitted_if_none()
    """``{metric: value}`` of the re-ranked 1-best."""
    oracle: Optional[dict[str, Optional[float]]] = omitted_if_none()
    """``{metric: value}`` of the best hypothesis in every list: the most re-ranking could reach."""
    ci95: Optional[Interval] = omitted_if_none()
    change: Optional[str] = omitted_if_none()
    """The interval in words: ``significantly better``, ``significantly worse``, ``no significant change``,
    ``unchanged``, or ``too few utterances to tell`` (under 30) / ``too few resamples to tell`` (under 1,000);
    ``(tuned here)`` follows on the tuning set."""
    better: Optional[int] = omitted_if_none()
    """Changed 1-bests closer to the reference than before."""
    worse: Optional[int] = omitted_if_none()
    same: Optional[int] = omitted_if_none()
    """Changed 1-bests exactly as far from the reference as before."""
    tuned_on_this_set: bool = False
    ppl: dict[str, Any] = field(default_factory=dict)
    """``{column: {ref, rescored_1best: {token_ppl, word_ppl, tokens, words, log_score}}}``: each LM's
    (pseudo-)perplexity of the references and of the rescored 1-best."""
    outputs: Optional[dict[str, str]] = omitted_if_none()
    """The files written for the set (``native``, ``jsonl``, ``1best``, ``toolkit_1best``); only when written."""


@dataclass(kw_only=True)
class SearchSummary(Record):
    """How the weights were found on the tuning set."""

    method: str
    """The search rule: ``fast``, ``grid`` or ``robust``."""
    settings: int
    """Weight settings scored."""
    seconds: float
    dev: float
    """The tuning set's metric under the chosen weights."""
    plot: Optional[str] = None
    """The weight plot, when one was drawn."""
    plot_note: Optional[str] = None
    """Why there is no plot (a search of more than 200,000 settings is not drawn)."""
    dev_ci95: Optional[list[float]] = None
    """The interval of the chosen setting's tuning metric (``robust``)."""


@dataclass(kw_only=True)
class Report(Record):
    """What a rescoring run (``task: rescore``) or an apply run (``task: apply``) reports: ``report.json``, and
    ``.report`` of what ``rescorer.rescore`` and ``rescorer.apply`` return. Where a value is NaN or
    infinite, ``report.json`` holds null and lists it under ``non_finite`` (``{key path: "nan"}``), so that the
    file is always strict JSON."""

    task: str
    """``rescore`` or ``apply``."""
    data: str
    """The data set's name."""
    metric: str
    """``wer`` or ``bleu``."""
    units: str
    """The metric's units (WER in percent)."""
    tuned: Optional[str] = omitted_if_none()
    """apply: the tuned rescorer file it read."""
    tuned_on: Optional[str]
    """The set the weights were tuned on."""
    base: str
    """The column of weight 1."""
    weights: dict[str, float]
    """``{column: weight}``."""
    search: Optional[SearchSummary] = omitted_if_none()
    """rescore: how the weights were found."""
    scorers: dict[str, str]
    """``{column: scorer signature}``: model and content hash, variant, normalisation, dtype."""
    signature: str
    """The re-ranking in one line: version, metric, base, weights and penalties, search."""
    sets: dict[str, SetReport]
    halves: Optional[dict[str, Any]] = None
    """rescore with ``task.halves``: per rule ``{deltas, weights, mean, std}`` of the half-split study."""
    penalties: dict[str, str] = field(default_factory=dict)
    """The length penalty of every tuned column (``none``, ``tokens``, ``gnmt``)."""
    notes: list[str] = field(default_factory=list)
    """What was decided for the user (e.g. an LM column divided by its tokens beside a per-token base)."""
    warnings: list[str] = field(default_factory=list)
    """What the user should look at (e.g. a weight on the edge of its range)."""
    tuned_file: Optional[str] = omitted_if_none()
    """rescore: where ``tuned.yaml`` was written."""
    html: Optional[str] = omitted_if_none()
    """Where ``report.html`` was written."""

    @classmethod
    def of(cls, *, task: str, data: str, metric: Metric, base: Column, columns: Sequence[Column],
           weights: Mapping[str, float], method: str, tuned_on: str | None, scorers: Mapping[str, str],
           sets: Mapping[str, SetReport], **more: Any) -> "Report":
        """The report of a re-ranking with ``weights`` found by search rule ``method`` (``scorers``: column →
        scorer signature); ``more``: the fields only some runs have (``search`` summary, ``tuned`` file, …)."""
        return cls(task=task, data=data, metric=metric.name, units=metric.units, tuned_on=tuned_on, base=base.name,
                   weights=dict(weights), scorers=dict(scorers),
                   signature=signature(metric, base, columns, weights, method), sets=dict(sets),
                   penalties={c.name: c.penalty for c in columns}, **more)


@dataclass(kw_only=True)
class EvaluatedSet(Record):
    """One set's input 1-best and oracle metric (``sets.<name>`` of an evaluate run's ``report.json``)."""

    format: str
    path: str
    utterances: int
    hypotheses: int
    columns: list[str]
    baseline: dict[str, Optional[float]]
    """``{metric: value}`` of the input (toolkit's) 1-best."""
    oracle: dict[str, Optional[float]]
    """``{metric: value}`` of the best hypothesis in every list."""


@dataclass(kw_only=True)
class Evaluation(Record):
    """What ``task=evaluate`` (``rescorer.pipeline.evaluate``) reports: every set's input 1-best and oracle."""

    task: str
    data: str
    metric: str
    units: str
    signature: str
    sets: dict[str, EvaluatedSet]

    def __repr__(self) -> str:
        """One line: each set's metric and its oracle."""
        return "Evaluation(" + "; ".join(f"{name}: {self.metric} {entry.baseline[self.metric]:.2f}, oracle "
                                         f"{entry.oracle[self.metric]:.2f}" for name, entry in self.sets.items()) + ")"


@dataclass(kw_only=True)
class ScoredSetReport(Record):
    """One set with LM columns added (``sets.<name>`` of a score run's ``report.json``)."""

    format: str
    utterances: int
    hypotheses: int
    outputs: dict[str, str]
    """The files written: the set in its own format (``native``) and as JSONL."""
    scorers: dict[str, Any]
    """``{column: {texts, cached, rows, seconds, ppl}}``: the cost and (P)PPL of each scorer on this set."""


@dataclass(kw_only=True)
class Scoring(Record):
    """What ``task=score`` (``rescorer.pipeline.score_sets``) reports: the lists with LM columns added."""

    task: str
    data: str
    signature: str
    scorers: dict[str, str]
    """``{column: scorer signature}``."""
    sets: dict[str, ScoredSetReport]

    def __repr__(self) -> str:
        """One line: the columns added and each set's size."""
        return (f"Scoring(columns={list(self.scorers)}, " + "; ".join(
            f"{name}: {entry.utterances} utterances" for name, entry in self.sets.items()) + ")")


def signature(metric: Metric, base: Column, columns: Sequence[Column], weights: Mapping[str, float],
              search: str) -> str:
    """How a re-ranking was made, sacrebleu-style: tool version, metric, base, each weight and penalty, search."""
    return signed(TOOL, metric.signature, f"base:{base.name}",
                  *(f"{c.name}:{weights[c.name]:g}/lp:{c.penalty}" for c in columns), f"search:{search}")
