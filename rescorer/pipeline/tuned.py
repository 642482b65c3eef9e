"""The tuned rescorer as a file (``tuned.yaml``): the base column, the tuned weights and penalties, the metric,
and every scorer's full spec and signature, so that new lists are scored and re-ranked exactly as on dev."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from ..combine import Column
from ..engine import BoundScorer
from ..errors import ConfigError, check_known
from ..metrics import Metric, make_metric
from ..version import __version__

FILE = "tuned.yaml"
ENGINE_KEYS = ("device", "dtype", "compile")  # where a model runs, not what it computes: set by the applying run
HEADER = ("# A tuned rescorer, written by `rescorer task=rescore`. Apply it to new N-best lists (references optional):\n"
          "#   rescorer task=apply task.tuned={path} data=own data.sets.test.nbest=NEW_LIST\n")


@dataclass(frozen=True)
class Tuned:
    """What a tuning run chose: ``base`` (weight 1), ``columns`` with their ``weights``, the ``metric`` it was
    tuned for (``{name, **options}``) and each LM column's scorer ``{spec, signature}``."""

    base: Column
    columns: tuple[Column, ...]
    weights: Mapping[str, float]
    metric: Mapping[str, Any]
    scorers: Mapping[str, Mapping[str, Any]]
    tuned_on: str = "dev"
    data: str = "data"
    search: str = "fast"
    version: str = __version__
    dev: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, base: Column, columns: list[Column], weights: Mapping[str, float], metric: Metric,
           scorers: Mapping[str, BoundScorer], **about: Any) -> "Tuned":
        """From a tuning run's choices and the scorers it used."""
        specs = {name: {"spec": scorer_spec(scorer), "signature": scorer.signature} for name, scorer in scorers.items()}
        return cls(base, tuple(columns), {c.name: float(weights[c.name]) for c in columns},
                   {"name": metric.name, **metric.options}, specs, **about)

    def to_yaml(self, path: str | Path = FILE) -> str:
        body = {"rescorer": self.version, "data": self.data, "tuned_on": self.tuned_on, "search": self.search,
                "metric": dict(self.metric), "dev": dict(self.dev),
                "base": {"name": self.base.name, "penalty": self.base.penalty, "alpha": self.base.alpha},
                "columns": {c.name: {"weight": self.weights[c.name], "penalty": c.penalty, "alpha": c.alpha}
                            for c in self.columns},
                "scorers": {name: {"spec": s["spec"], "signature": s["signature"]} for name, s in self.scorers.items()}}
        return HEADER.format(path=path) + yaml.safe_dump(body, sort_keys=False, allow_unicode=True, width=1000)

    @classmethod
    def load(cls, path: str | Path) -> "Tuned":
        """Read ``tuned.yaml``; a missing file, bad YAML or a missing or wrong key is one line naming it."""
        path = Path(path)
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"task.tuned={path}: no such file (a tuning run writes tuned.yaml in its out_dir)") from None
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
            raise ConfigError(f"{path}: not a readable tuned.yaml ({' '.join(str(err).split())[:200]})") from None
        known = {"rescorer", "data", "tuned_on", "search", "metric", "dev", "base", "columns", "scorers"}
        if not isinstance(doc, dict) or not {"base", "columns", "metric", "scorers"} <= set(doc):
            raise ConfigError(f"{path}: not a tuned.yaml (it needs base, columns, metric and scorers)")
        try:
            check_known("key", doc, known)
        except ConfigError as err:
            raise ConfigError(f"{path}: {err}") from None
        columns, weights = [], {}
        for name, spec in _mapping(doc["columns"], path, "columns").items():
            spec = dict(_mapping(spec, path, f"columns.{name}"))
            weights[str(name)] = _number(spec.pop("weight", None), path, f"columns.{name}.weight")
            columns.append(_column(str(name), spec, path))
        base = dict(_mapping(doc["base"], path, "base"))
        scorers = {str(name): _scorer(entry, path, name) for name, entry in _mapping(doc["scorers"], path, "scorers").items()}
        metric = dict(_mapping(doc["metric"], path, "metric"))
        try:
            make_metric(**metric)  # refuse an unknown metric or option now
        except (ConfigError, TypeError) as err:
            raise ConfigError(f"{path}: metric: {err}") from None
        return cls(_column(str(base.pop("name", "score")), base, path), tuple(columns), weights, metric, scorers,
                   str(doc.get("tuned_on", "dev")), str(doc.get("data", "data")), str(doc.get("search", "fast")),
                   str(doc.get("rescorer", "")), dict(doc.get("dev") or {}))

    def make_metric(self) -> Metric:
        return make_metric(**self.metric)

    def check(self, scorers: Mapping[str, BoundScorer], path: str | Path, accept_changed: bool = False) -> None:
        """Refuse a scorer whose signature differs from the tuned one (the model or its options changed since),
        naming the fields that differ, unless ``accept_changed``."""
        for name, scorer in scorers.items():
            was = self.scorers[name]["signature"]
            if scorer.signature != was and not accept_changed:
                differ = changed_fields(was, scorer.signature)
                raise ConfigError(f"{path}: scorer {name} is not the one these weights were tuned with "
                                  f"({differ}); retune, or pass task.accept_changed_models=true to apply anyway")


def scorer_spec(scorer: BoundScorer) -> dict[str, Any] | None:
    """How to load ``scorer`` again (``load_scorer`` options, without where it ran); None for in-memory models."""
    spec = scorer.adapter.spec
    if spec is None:
        return None
    return {k: os.fspath(v) if isinstance(v, os.PathLike) else v for k, v in spec.items() if k not in ENGINE_KEYS}


def changed_fields(before: str, after: str) -> str:
    """The ``key:value`` fields that differ between two signatures, as ``key: old → new``."""
    old, new = (dict(part.partition(":")[::2] for part in s.split("|")) for s in (before, after))
    keys = [k for k in dict.fromkeys([*old, *new]) if old.get(k) != new.get(k)]
    return "; ".join(f"{k}: {old.get(k, '-')} → {new.get(k, '-')}" for k in keys) or "signature differs"


def _mapping(value: Any, path: Path, key: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path}: {key} must be a mapping, not {value!r}")
    return value


def _number(value: Any, path: Path, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{path}: {key} must be a number, not {value!r}")
    return float(value)


def _column(name: str, spec: Mapping[str, Any], path: Path) -> Column:
    try:
        return Column.of(name, spec)
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None


def _scorer(entry: Any, path: Path, name: str) -> dict[str, Any]:
    entry = _mapping(entry, path, f"scorers.{name}")
    if not isinstance(entry.get("signature"), str) or not isinstance(entry.get("spec"), (Mapping, type(None))):
        raise ConfigError(f"{path}: scorers.{name} needs a spec (mapping) and a signature (string)")
    return {"spec": dict(entry["spec"]) if entry["spec"] is not None else None, "signature": entry["signature"]}
