"""The tuned rescorer as a file (``tuned.yaml``): the base column, the tuned weights and penalties, the metric,
and every scorer's full spec and signature, so that new lists are scored and re-ranked exactly as on dev."""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from numbers import Real
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping, Optional

import msgspec
import yaml

from ..combine import Column
from ..engine import BoundScorer, load_scorers
from ..errors import ConfigError, NBestFormatError, check_known
from ..log import warning
from ..metrics import Metric, make_metric
from ..safetext import visible
from ..options import Count, Finite, Option, typed
from ..scorers import KINDS, option_names
from ..strictyaml import DuplicateKey, StrictLoader
from ..version import TOOL, __version__
from .portable import Models, check_moved, located_model, portable_model

FILE = "tuned.yaml"
MAX_BYTES = 1 << 20  # a tuned file is a few hundred bytes a scorer
TUNED = Option("path", example="tuned.yaml, or a rescorer.Tuned")  # a tuned file's path as the API takes it
# What a tuned file never decides: code execution, and where and how the applying run computes.
ACCEPT = "accept_changed_models=True (task.accept_changed_models=true on the command line)"
RUN_KEYS = frozenset({"trust_remote_code", "device", "dtype", "compile", "threads", "budget", "store", "progress",
                      "scale", "loaded", "grammar"})


class ScorerRecord(msgspec.Struct, forbid_unknown_fields=True):
    """``scorers.NAME`` of a tuned file: how to load the scorer again (checked by :func:`checked_spec`) and the
    signature of the one tuned with."""

    signature: str
    spec: Optional[dict[str, Any]] = None


class Penalised(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A column's length penalty in a tuned file (:class:`~rescorer.combine.Column`)."""

    penalty: str = "auto"
    alpha: Finite = 1.0


class BaseRecord(Penalised, kw_only=True):
    """``base`` of a tuned file: the toolkit's column, weight 1."""

    name: str = "score"


class ColumnRecord(Penalised, kw_only=True):
    """``columns.NAME`` of a tuned file."""

    weight: Finite


class TunedRecord(msgspec.Struct, forbid_unknown_fields=True):
    """What a tuned file holds, key by key (:meth:`Tuned.to_yaml` writes it)."""

    base: BaseRecord
    columns: dict[str, ColumnRecord]
    metric: dict[str, Any]
    scorers: dict[str, ScorerRecord]
    rescorer: str = ""
    data: str = "data"
    tuned_on: str = "dev"
    search: str = "fast"
    dev: Optional[dict[str, Finite]] = None
    lists: Optional[dict[Literal["utterances", "hypotheses", "depth"], Count]] = None
    """The tuning lists: ``utterances``, ``hypotheses`` and ``depth`` (the most hypotheses of an utterance)."""


HEADER = ("# A tuned rescorer, written by `rescorer task=rescore`. Apply it to new N-best lists (references optional):\n"
          "#   rescorer task=apply task.tuned={path} data=own data.sets.test.nbest=NEW_LIST\n")


@dataclass(frozen=True)
class Tuned:
    """What a tuning run chose: ``base`` (weight 1), ``columns`` with their ``weights``, the ``metric`` it was
    tuned for and each LM column's scorer ``{spec, signature}``."""

    base: Column
    columns: tuple[Column, ...]
    weights: Mapping[str, float]
    metric: Metric
    scorers: Mapping[str, Mapping[str, Any]]
    tuned_on: str = "dev"
    data: str = "data"
    search: str = "fast"
    version: str = __version__
    dev: Mapping[str, float] = field(default_factory=dict)
    lists: Mapping[str, int] = field(default_factory=dict)
    """The tuning lists: ``utterances``, ``hypotheses`` and ``depth`` (the most hypotheses of an utterance)."""
    loaded: Mapping[str, BoundScorer] = field(default_factory=dict, compare=False, repr=False)
    """The scorers a tuning run in this process used, kept (not written) so that applying reuses them and their
    store: what they scored is not scored again."""

    @classmethod
    def of(cls, base: Column, columns: list[Column], weights: Mapping[str, float], metric: Metric,
           scorers: Mapping[str, BoundScorer], **about: Any) -> "Tuned":
        """From a tuning run's choices and the scorers it used."""
        specs = {name: {"spec": scorer_spec(scorer), "signature": scorer.signature} for name, scorer in scorers.items()}
        return cls(base, tuple(columns), {c.name: float(weights[c.name]) for c in columns},
                   metric, specs, loaded=dict(scorers), **about)

    def to_yaml(self, path: str | Path = FILE) -> str:
        """The file at ``path``: its models named so that it can be copied (see :mod:`.portable`)."""
        folder = Path(path).parent
        specs = {name: s["spec"] and {**s["spec"], **({"model": portable_model(str(s["spec"]["model"]), folder)}
                                                      if s["spec"].get("model") else {})}
                 for name, s in self.scorers.items()}
        body = {"rescorer": self.version, "data": self.data, "tuned_on": self.tuned_on, "search": self.search,
                "metric": {"name": self.metric.name, **self.metric.options}, "dev": dict(self.dev),
                "lists": dict(self.lists),
                "base": {"name": self.base.name, "penalty": self.base.penalty, "alpha": self.base.alpha},
                "columns": {c.name: {"weight": self.weights[c.name], "penalty": c.penalty, "alpha": c.alpha}
                            for c in self.columns},
                "scorers": {name: {"spec": specs[name], "signature": s["signature"]} for name, s in self.scorers.items()}}
        return HEADER.format(path=visible(path)) + yaml.safe_dump(body, sort_keys=False, allow_unicode=True, width=1000)

    def __post_init__(self) -> None:
        for name, weight in self.weights.items():
            if isinstance(weight, bool) or not isinstance(weight, Real) or not math.isfinite(weight):
                raise ConfigError(f"weight of {name} must be a finite number, not {weight!r}")

    @classmethod
    def load(cls, path: str | Path) -> "Tuned":
        """Read ``tuned.yaml`` and check all of it against its schema before anything uses it: a missing, special
        or oversized file, bad YAML (aliases included), an unknown key, a value of the wrong type, a weight that is
        not finite, or a scorer spec that asks for what only the applying run decides is one line naming it."""
        path = Path(TUNED.check("tuned", path))
        doc = read_yaml(path)
        if not isinstance(doc, dict) or not {"base", "columns", "metric", "scorers"} <= set(doc):
            raise ConfigError(f"{path}: not a tuned.yaml (it needs base, columns, metric and scorers)")
        try:
            record = typed(doc, TunedRecord)
            base, columns = record.base, record.columns
            return cls(Column(base.name, base.penalty, base.alpha),
                       tuple(Column(name, column.penalty, column.alpha) for name, column in columns.items()),
                       {name: column.weight for name, column in columns.items()}, make_metric(**record.metric),
                       {name: scorer_entry(entry, name) for name, entry in record.scorers.items()},
                       record.tuned_on, record.data, record.search, record.rescorer, record.dev or {},
                       record.lists or {})
        except (ConfigError, TypeError) as err:
            raise ConfigError(f"{path}: {err}") from None

    def located(self, source: Path | None, models: Models = None) -> "Tuned":
        """The same rescorer with every model found on this machine (:func:`.portable.located_model`)."""
        if models is not None and not isinstance(models, (str, os.PathLike, Mapping)):
            raise ConfigError(f"models must be a directory or {{column or model name: path}}, not "
                              f"{type(models).__name__}")
        check_moved(models, self.scorers)
        scorers = {name: {**entry, "spec": {**entry["spec"], "model": located_model(str(entry["spec"]["model"]), name,
                                                                                    source, models)}}
                   if entry["spec"] and entry["spec"].get("model") else entry for name, entry in self.scorers.items()}
        return replace(self, scorers=scorers)

    def check_models(self, path: str | Path, accept_changed: bool = False, given: Iterable[str] = ()) -> None:
        """Before any model is loaded: refuse a scorer whose local model files are not those it was tuned with (the
        fingerprint its signature records), unless ``accept_changed``; the ``given`` columns' scorers are the
        caller's own."""
        from ..scorers.loading import local_fingerprint

        for name, entry in self.scorers.items():
            spec = entry["spec"] or {}
            if accept_changed or name in given or not spec.get("model"):
                continue
            target = str(spec["model"]) + (f"/{spec['gguf_file']}" if spec.get("gguf_file") else "")
            was = signature_fields(entry["signature"]).get("model", "").rpartition("@")[2]
            now = local_fingerprint(target)
            if now is not None and now != was:
                raise ConfigError(f"{path}: scorer {name} is not the one these weights were tuned with (the files of "
                                  f"model {spec['model']} changed: fingerprint {was or '-'} → {now}); retune, or apply "
                                  f"anyway with {ACCEPT}")

    def bound(self, given: Mapping[str, BoundScorer], engine: Mapping[str, Any] | None, where: str,
              accept_changed: bool = False) -> dict[str, BoundScorer]:
        """Its scorers, in its order: the ``given`` ones (the caller's own), the others loaded from their specs with
        ``engine`` settings; each checked first by its model's files (:meth:`check_models`), then as loaded
        (:meth:`check`). Errors name ``where`` (the tuned file)."""
        self.check_models(where, accept_changed, given)
        specs = {column: entry["spec"] for column, entry in self.scorers.items() if column not in given}
        in_memory = sorted(column for column, spec in specs.items() if spec is None)
        if in_memory:
            raise ConfigError(f"{where}: scorer(s) {in_memory} were in-memory models: pass them as scorers=")
        unknown = sorted(set(given) - set(self.scorers))
        if unknown:
            raise ConfigError(f"scorer(s) {unknown} are not in the tuned rescorer "
                              f"({', '.join(self.scorers) or 'none'})")
        loaded = {**load_scorers(specs, engine), **given}
        self.check(loaded, where, accept_changed)
        return {column: loaded[column] for column in self.scorers}

    def check(self, scorers: Mapping[str, BoundScorer], path: str | Path, accept_changed: bool = False) -> None:
        """Refuse a scorer whose signature (of the model as loaded) differs from the tuned one (the model or its
        options changed since), naming the fields that differ; with ``accept_changed``, say so in one warning line
        instead."""
        for name, scorer in scorers.items():
            differ = changed_fields(self.scorers[name]["signature"], scorer.signature)
            if differ and not accept_changed:
                raise ConfigError(f"{path}: scorer {name} is not the one these weights were tuned with "
                                  f"({differ}); retune, or apply anyway with {ACCEPT}")
            if differ:
                warning(f"{path}: scorer {name} is not the one these weights were tuned with ({differ}); applied "
                        "anyway, as accept_changed_models asks")


def scorer_spec(scorer: BoundScorer) -> dict[str, Any] | None:
    """How to load ``scorer`` again (``load_scorer`` options, without where it ran); None for in-memory models."""
    spec = scorer.spec
    if spec is None:
        return None
    return {k: os.fspath(v) if isinstance(v, os.PathLike) else v for k, v in spec.items() if k not in RUN_KEYS}


def signature_fields(signature: str) -> dict[str, str]:
    """The ``key:value`` fields of a signature."""
    return dict(part.partition(":")[::2] for part in signature.split("|"))


def changed_fields(before: str, after: str) -> str:
    """The ``key:value`` fields that differ between two signatures, as ``key: old → new`` (empty: none); a model
    is the same where its content is (a signature of an earlier version named a local model ``path@hash``)."""
    old, new = (signature_fields(s) for s in (before, after))
    content = {k: v.rpartition("@")[2] for k, v in old.items()}, {k: v.rpartition("@")[2] for k, v in new.items()}
    keys = [k for k in dict.fromkeys([*old, *new])
            if old.get(k) != new.get(k) and not (k == "model" and content[0].get(k) == content[1].get(k))]
    return "; ".join(f"{k}: {old.get(k, '-')} → {new.get(k, '-')}" for k in keys)


def read_yaml(path: Path) -> Any:
    """The YAML document of a tuned file: a regular file of at most ``MAX_BYTES``, read by :class:`StrictLoader`."""
    from ..io.common import read_text

    try:
        return yaml.load(read_text(path, MAX_BYTES), Loader=StrictLoader)  # noqa: S506 — a SafeLoader, stricter
    except NBestFormatError as err:
        if err.problem == "no such file":
            raise ConfigError(f"task.tuned={path}: no such file (a tuning run writes tuned.yaml in its out_dir)") \
                from None
        raise ConfigError(f"{path}: not a readable tuned.yaml ({err.problem})") from None
    except DuplicateKey as err:
        raise ConfigError(f"{path}:{err.problem_mark.line + 1}: {err.problem}") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not a readable tuned.yaml ({' '.join(str(err).split())[:200]})") from None


def scorer_entry(entry: ScorerRecord, name: str) -> dict[str, Any]:
    """``scorers.NAME`` of a tuned file: its ``spec`` (checked by :func:`checked_spec`) and ``signature``, which must
    be a whole signature of the spec's kind."""
    spec = checked_spec(entry.spec, name)
    parts = entry.signature.split("|")
    if (spec and parts[0] != spec["kind"]) or not parts[-1].startswith(f"{TOOL.partition(':')[0]}:"):
        raise ConfigError(f"scorers.{name}.signature is not a whole {spec['kind'] if spec else 'scorer'} signature "
                          f"(cut short or edited?): {entry.signature[:80]!r}")
    return {"spec": spec, "signature": entry.signature}


def checked_spec(spec: Any, name: str) -> dict[str, Any] | None:
    """A scorer spec as a tuned file may hold it: which model and which options change the numbers, as plain
    values; never what runs code or where and how the run computes (``RUN_KEYS``, the applying run's choice)."""
    if spec is None:
        return None
    where = f"scorers.{name}.spec"
    spec = dict(spec)
    for key in spec:
        if key in RUN_KEYS and not (key == "trust_remote_code" and spec[key] is False):  # false asks for nothing
            why = ("a tuned file never runs code" if key == "trust_remote_code" else
                   f"where and how a run computes is the applying run's choice (engine.{key})")
            raise ConfigError(f"{where}.{key}: a tuned file may not set {key} ({why})")
    check_known(f"{where}.kind", [spec.get("kind")], KINDS)
    check_known(f"{where} key", spec, (option_names(spec["kind"]) | {"kind", "model"}) - RUN_KEYS)
    Option("text", null=True).check(f"{where}.model", spec.get("model"))
    for key, value in spec.items():
        values = value.values() if key == "context" and isinstance(value, Mapping) else [value]
        if not all(v is None or isinstance(v, (str, int, float)) for v in values):
            raise ConfigError(f"{where}.{key} must be a plain value (string, number, true/false), not {value!r}")
    if isinstance(spec.get("context"), Mapping) and spec["context"].get("source") == "reference":
        raise ConfigError(f"{where}.context.source: a tuned rescorer never reads the references as context (that is "
                          "for analysis with task=score): use first_pass or rescored")
    return spec
