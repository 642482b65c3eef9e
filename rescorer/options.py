"""Typed options: what each config key or API argument may hold, checked where its reader takes it, so that a value
of the wrong kind or out of range is one line naming the key instead of a crash deep inside."""
from __future__ import annotations

import math
import os
import re
import sys
import types
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Annotated, Any, Collection, Mapping, Union, get_args, get_origin, get_type_hints

import msgspec

from .errors import ConfigError, UnknownNameError, short_repr

KINDS = {"integer": "an integer", "number": "a number", "mapping": "a mapping", "text": "a string",
         "path": "a path", "paths": "a path or a list of paths", "flag": "true or false",
         "seconds": "a number of seconds (inf: no limit)"}


@dataclass(frozen=True)
class Option:
    """One option's kind (``integer``, ``number``: finite, ``seconds``: a time limit, inf for none, ``mapping``,
    ``text``, ``path``, ``paths``: a path or a list of them, ``flag``), its bounds for numbers (``strict``: the
    bounds themselves excluded), the texts it takes (``choices``, and also, with a ``pattern``, any text that
    matches it whole, described by ``example``), the options of a mapping's own keys (``fields``, checked in turn), whether null is allowed and an example for errors."""

    kind: str
    low: float | None = None
    high: float | None = None
    strict: bool = False
    null: bool = False
    example: str = ""  # shown after the kind, e.g. ``{ctc: {range: [0, 1], step: 0.1}}``
    choices: Collection[str] = field(default=(), hash=False)
    pattern: str = ""
    fields: Mapping[str, "Option"] = field(default_factory=dict, hash=False)

    def check(self, key: str, value: Any) -> Any:
        """``value`` itself; a :class:`ConfigError` naming ``key`` (``key.field`` for a mapping's field) if it is
        not what this option holds."""
        if value is None and self.null:
            return value
        if not (self.holds_kind(value) and self.in_range(value)):
            raise ConfigError(f"{key} must be {self.described}, not {short_repr(value)}")
        if (self.choices or self.pattern) and not (value in self.choices or self.pattern
                                                    and re.fullmatch(self.pattern, value)):
            if not self.pattern:  # a misspelt name: the closest choice
                raise UnknownNameError(key, value, self.choices)
            raise ConfigError(f"{key} must be {self.described}, not {short_repr(value)}")
        checked(f"{key}.", value if self.fields else {}, self.fields)
        return value

    def holds_kind(self, value: Any) -> bool:
        if self.kind == "integer":
            return isinstance(value, Integral) and not isinstance(value, bool)
        if self.kind in ("number", "seconds"):  # seconds: a limit, which may be infinite
            return (isinstance(value, Real) and not isinstance(value, bool) and not math.isnan(value)
                    and (math.isfinite(value) or self.kind == "seconds"))
        if self.kind == "mapping":
            return isinstance(value, Mapping)
        if self.kind == "text":
            return isinstance(value, str)
        if self.kind == "path":  # a NUL byte cannot be in any path the system opens
            return isinstance(value, (str, os.PathLike)) and "\0" not in os.fspath(value)
        if self.kind == "paths":
            return all(map(PATH.holds_kind, value if isinstance(value, (list, tuple)) else [value]))
        return isinstance(value, bool)

    def in_range(self, value: Any) -> bool:
        if self.strict:
            return (self.low is None or value > self.low) and (self.high is None or value < self.high)
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)

    @property
    def described(self) -> str:
        """In words, e.g. ``an integer ≥ 1 or null``, ``a number in (0, 1)``, ``one of none, gnmt``."""
        if self.choices or self.pattern:
            return f"one of {', '.join([*self.choices, *([self.example] if self.pattern else [])])}" + (
                " or null" if self.null else "")
        if self.low is not None and self.high is not None:
            bounds = f" in {'(' if self.strict else '['}{self.low:g}, {self.high:g}{')' if self.strict else ']'}"
        elif self.low is not None:
            bounds = f" {'>' if self.strict else '≥'} {self.low:g}"
        elif self.high is not None:
            bounds = f" {'<' if self.strict else '≤'} {self.high:g}"
        else:
            bounds = ""
        example = f" ({self.example})" if self.example else ""
        return KINDS[self.kind] + bounds + example + (" or null" if self.null else "")


def keywords(function: Any) -> tuple[set[str], bool]:
    """The keyword arguments ``function`` takes by name, and whether it takes others too (``**options``)."""
    import inspect

    parameters = inspect.signature(function).parameters.values()
    named = {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return named, any(p.kind is p.VAR_KEYWORD for p in parameters)


def checked(prefix: str, values: Mapping[str, Any], options: Mapping[str, Option]) -> dict[str, Any]:
    """``values`` as a dict, each one ``options`` describes checked (named ``prefix`` + key in errors); the
    others are left to their reader."""
    for key, option in options.items():
        if key in values:
            option.check(f"{prefix}{key}", values[key])
    return dict(values)


TEXT, PATH, MAPPING, FLAG = Option("text"), Option("path"), Option("mapping"), Option("flag")
SEED = Option("integer", low=0)              # numpy's generators take no negative seed
RESAMPLES = Option("integer", low=1, high=100_000)  # bootstrap resamples (each one a row of utterance draws)
HALVES = Option("integer", low=0, high=1000)  # random half-splits, each a whole tuning run
RUN = {"bootstrap": RESAMPLES, "seed": SEED, "halves": HALVES}  # a rescoring run's own (task.bootstrap, …)
COUNT = Option("integer", low=1)
# A training's own (task.epochs, …; checked before any data is read or any teacher scores)
TRAINING = {"epochs": COUNT, "steps": COUNT, "batch_size": COUNT, "eval_every": COUNT, "max_length": COUNT,
            "patience": COUNT, "until": Option("integer", low=1, null=True), "lr": Option("number", low=0, strict=True),
            "dev_fraction": Option("number", low=0, high=1, strict=True), "list_weight": Option("number", low=0),
            "max_seconds": Option("seconds", low=0, strict=True), "seed": SEED}


@dataclass(frozen=True)
class RunOptions:
    """A rescoring run's own options, checked once where they come in (:meth:`of`): paired-bootstrap resamples of
    each set's change, the seed of the bootstrap and the search, random half-splits of the tuning set (0: none)."""

    bootstrap: int = 1000
    seed: int = 0
    halves: int = 0

    @classmethod
    def of(cls, values: Mapping[str, Any], prefix: str = "") -> "RunOptions":
        """The run options among ``values`` (other keys are not read), each checked; errors name ``prefix`` + key."""
        return cls(**{key: value for key, value in checked(prefix, values, RUN).items() if key in RUN})


Finite = Annotated[float, msgspec.Meta(ge=-sys.float_info.max, le=sys.float_info.max)]  # a number, not inf or NaN
Count = Annotated[int, msgspec.Meta(ge=0)]
WORDS = {"float": "a number", "int": "an integer", "str": "a string", "object": "a mapping", "array": "a list",
         "bool": "true or false", "null": "null"}  # msgspec's names of JSON types, as an error says them
_PROBLEM = re.compile(r"(?P<what>.*?)(?: - at (?P<of_key>`key` in )?`\$(?P<path>.*)`)?")
_STEP = re.compile(r"\.([^.\[]+)|\[([^\]]*)\]")


def typed(value: Any, schema: Any) -> Any:
    """``value`` (as YAML or JSON loads it) converted to ``schema`` (a msgspec Struct, whose fields declare each key's
    type); a value that does not fit is one :class:`ConfigError` naming its key (``columns.ctc.weight``), what it must
    be and what it is, and an unknown key is an :class:`UnknownNameError` with the keys that fit there."""
    try:
        return msgspec.convert(value, schema)
    except msgspec.ValidationError as err:
        found = _PROBLEM.fullmatch(str(err))
        keys, node, kind = _located(value, schema, _STEP.findall(found["path"] or ""))
        where, what = ".".join(keys), found["what"]
        if unknown := re.fullmatch(r"Object contains unknown field `(.*)`", what):
            raise UnknownNameError(f"{where} key" if where else "key", unknown[1],
                                   list(get_type_hints(kind))) from None
        if invalid := re.fullmatch(r"Invalid enum value '(.*)'", what):
            raise UnknownNameError(f"{where} key", invalid[1], get_args(get_args(kind)[0])) from None
        if missing := re.fullmatch(r"Object missing required field `(.*)`", what):
            raise ConfigError(f"{where or 'it'} has no {missing[1]}, which it needs") from None
        expected = re.match(r"Expected `([^`]*)`(.*?)(?:, got `|$)", what)
        if expected is None:
            raise ConfigError(f"{where}: {what}") from None
        bound = expected[2].strip().replace(">=", "≥").replace("<=", "≤")
        words = "a number" if bound.endswith("e+308") else " or ".join(
            WORDS.get(name, name) for name in expected[1].split(" | ")) + (f" {bound}" if bound else "")
        if found["of_key"]:  # a mapping's key: the first that does not fit
            where, node = f"each key of {where}", next(k for k in node if not _fits(k, get_args(kind)[0]))
        raise ConfigError(f"{where} must be {words}, not {short_repr(node)}") from None


def _inner(kind: Any) -> Any:
    """``kind`` without ``Optional`` or ``Annotated`` around it."""
    while getattr(kind, "__metadata__", None) is not None or (
            get_origin(kind) in (Union, types.UnionType) and type(None) in get_args(kind)):
        kind = next(arg for arg in get_args(kind) if arg is not type(None))
    return kind


def _located(value: Any, kind: Any, steps: list[tuple[str, str]]) -> tuple[list[str], Any, Any]:
    """The keys along msgspec's error path (``$.scorers[...].signature``: a mapping's key is given as ``[...]``, found
    here as the first of its items that does not fit), the value there and its declared type."""
    keys = []
    for name, index in steps:
        kind = _inner(kind)
        if name:
            kind, value = get_type_hints(kind, include_extras=True)[name], value.get(name)
            keys.append(name)
        elif index == "...":
            kind = get_args(kind)[1]
            key = next(k for k, item in value.items() if not _fits(item, kind))
            keys.append(str(key))
            value = value[key]
        else:
            kind, value = get_args(kind)[0], value[int(index)]
            keys[-1:] = [f"{keys[-1] if keys else ''}[{index}]"]
    return keys, value, _inner(kind)


def _fits(value: Any, kind: Any) -> bool:
    try:
        msgspec.convert(value, kind)
    except msgspec.ValidationError:
        return False
    return True
