"""Named N-best sets of an experiment (what ``conf/data/*.yaml`` instantiates)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from ..errors import ConfigError, NBestFormatError, check_known
from ..options import MAPPING, Option, checked
from ..paths import data_root
from ..types import NBest
from . import READ, detect_format, metric_for, read_blocks
from .common import present
from .refs import References

SET_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*")  # a set's name names its files in out_dir
SUBSET = {"nbest": READ["path"], "refs": READ["refs"], "fmt": READ["fmt"], "refs_fmt": READ["refs_fmt"],
          "options": MAPPING, "every": Option("integer", low=1),
          "start": Option("integer", low=0), "stop": Option("integer", low=1, null=True),
          "top": Option("integer", low=1, null=True)}


def check_set_names(names: Iterable[object]) -> None:
    """Refuse a set name that is not a plain file name: letters, digits, ``_``, ``-`` and ``.``, not starting with
    ``.`` (so no path, no hidden file, nothing outside ``out_dir``)."""
    for name in names:
        if not isinstance(name, str) or not SET_NAME.fullmatch(name):
            raise ConfigError(f"set name {name!r} is not a plain name: use letters, digits, '_', '-' and '.', not "
                              "starting with '.' (it names the set's files in out_dir)")


@dataclass
class NBestSet:
    """One N-best file or directory with its references and reader options; ``where`` names its options in errors
    (``data.sets.dev.``; default: the N-best path)."""

    nbest: str
    refs: str | None = None
    fmt: str = "auto"
    refs_fmt: str = "auto"
    options: Mapping[str, Any] = field(default_factory=dict)
    every: int = 1           # keep every k-th utterance (a fixed, documented subset) ...
    start: int = 0           # ... of utterances [start, stop) in file order
    stop: int | None = None
    top: int | None = None   # keep the best ``top`` hypotheses of each list
    where: str = field(default="", compare=False, repr=False)

    def __post_init__(self) -> None:
        self.where = self.where or f"{self.nbest}: "
        checked(self.where, {f.name: getattr(self, f.name) for f in fields(self)}, SUBSET)
        if self.stop is not None and self.stop <= self.start:
            raise ConfigError(f"{self.where}stop={self.stop} must be greater than start={self.start} (utterances "
                              "[start, stop) are kept)")

    def read(self) -> NBest:
        """The set whole: its blocks joined."""
        blocks = self.blocks()
        first = next(blocks)
        return first.with_utterances([u for block in (first, *blocks) for u in block.utterances])

    def blocks(self, size: int = 0) -> Iterator[NBest]:
        """The set as blocks of whole utterances (see :func:`rescorer.io.read_blocks`), its references attached
        and its subset taken (utterances ``[start, stop)``, every ``every``-th, each cut to the best ``top``), at
        least one block; the whole file is read, so every reference must find its utterance."""
        options = dict(self.options)
        fmt = self.format
        if fmt == "nemo" and self.refs is not None and "manifest" not in options and "beam_size" not in options:
            options["manifest"] = self.refs
        refs, position, kept = None, 0, 0
        for block in read_blocks(self.nbest, fmt, size, **options):
            if self.refs is not None:
                refs = refs or References.read(self.refs, self.refs_fmt, block)
                block = refs.attach(block)
            chosen = [u for k, u in enumerate(block.utterances, position) if self.start <= k
                      and (self.stop is None or k < self.stop) and (k - self.start) % self.every == 0]
            position += len(block)
            if self.top is not None:
                chosen = [replace(u, hyps=u.hyps[: self.top]) for u in chosen]
            if chosen or not kept:
                kept += len(chosen)
                yield block.with_utterances(chosen)
        if not position:
            raise NBestFormatError(self.nbest, None, "no utterances found")
        if self.start >= position:
            raise ConfigError(f"{self.where}start={self.start} is past the last utterance ({self.nbest} has "
                              f"{position})")
        if refs is not None:
            refs.finish(self.nbest)

    @property
    def inputs(self) -> list[str]:
        """The files (or directories) the set is read from: the N-best and the references."""
        return [path for path in (self.nbest, self.refs) if path]

    @property
    def format(self) -> str:
        return detect_format(self.nbest) if self.fmt == "auto" else self.fmt


def unset(name: str, spec: Mapping[str, Any]) -> None:
    """A set without ``nbest`` is left out only when nothing else was given for it either: a stray key is what a
    dotted set name becomes on the command line, and references without a list are a list forgotten."""
    stray = [key for key in spec if key not in SUBSET]
    if stray:
        raise ConfigError(f"data.sets.{name} has no nbest but a key {stray[0]!r}: on the command line a dot in a set "
                          f"name nests it (data.sets.{name}.{stray[0]}…); name the set without dots, e.g. "
                          f"data.sets.{name}_{stray[0]}.nbest=PATH")
    if spec.get("refs") is not None:
        raise ConfigError(f"data.sets.{name}.refs is given but data.sets.{name}.nbest is not: name its N-best list "
                          f"(data.sets.{name}.nbest=PATH)")


@dataclass
class Corpus:
    """The sets of one experiment (e.g. dev_other for tuning, test_clean for reporting) and its metric."""

    name: str
    sets: Mapping[str, NBestSet]
    metric: Mapping[str, Any] = field(default_factory=dict)
    root: str | None = None  # the base directory the set paths were built from (informational)

    def __post_init__(self) -> None:
        for name, spec in (self.sets or {}).items():
            if isinstance(spec, Mapping) and spec.get("nbest") is None:
                unset(name, spec)
        given = {k: v for k, v in (self.sets or {}).items()
                 if v is not None and (isinstance(v, NBestSet) or v.get("nbest") is not None)}
        if not given:
            raise ConfigError(f"data '{self.name}' lists no sets (give one: data.sets.<name>.nbest=PATH)")
        for name, spec in given.items():
            if isinstance(spec, Mapping):
                check_known(f"data.sets.{name} key", spec, SUBSET)
        check_set_names(given)
        self.sets = {k: v if isinstance(v, NBestSet) else NBestSet(**v, where=f"data.sets.{k}.")
                     for k, v in given.items()}
        for name, spec in self.sets.items():
            if not present(spec.nbest):
                raise ConfigError(f"data.sets.{name}.nbest: no such file or directory: {spec.nbest}"
                                  f"{self.where_data(spec.nbest)}")
            if spec.refs is not None and not present(spec.refs):
                raise ConfigError(f"data.sets.{name}.refs: no such file: {spec.refs}{self.where_data(spec.refs)}")

    def where_data(self, path: str) -> str:
        """For a path under the data root that is not there: which data the config needs and how to point at it."""
        root = data_root()
        if root not in Path(path).parents:
            return ""
        return (f" (data={self.name} reads {root}/{Path(path).relative_to(root).parts[0]}: put the data folder "
                f"beside the repository as ../shared/data, or set RESCORER_DATA=DIR to where it is)")

    @property
    def metric_name(self) -> str:
        """``wer`` or ``bleu``: as configured, else BLEU for MT formats and WER otherwise."""
        return metric_for(self.metric.get("name", "auto"), (s.format for s in self.sets.values()))

    @property
    def metric_options(self) -> dict[str, Any]:
        return {k: v for k, v in self.metric.items() if k != "name"}
