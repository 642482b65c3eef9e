"""The N-best data model: utterances → ranked hypotheses → named score columns.

Plain frozen records with no I/O and no torch. Every score is a natural
log-probability-like value where higher is better; ``raw`` keeps the value as
it was written in the input file (before base or sign conversion).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from operator import itemgetter
from typing import Iterator, Mapping, Optional, Sequence

import msgspec
import numpy as np


class _Empty(dict):
    """The one empty mapping every hypothesis without raw values or meta shares (a list holds millions): a dict
    that cannot be changed."""

    def _refuse(self, *args, **kwargs):
        raise TypeError("this empty mapping is shared and cannot be changed: build a new dict")

    __setitem__ = __delitem__ = update = setdefault = pop = popitem = clear = __ior__ = _refuse  # type: ignore

    def __hash__(self) -> int:
        return 0

    def __reduce__(self):
        return _empty, ()


def _empty() -> "_Empty":
    return EMPTY


EMPTY: Mapping = _Empty()


class Hypothesis(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """One ranked hypothesis of an utterance. Also the hypothesis object of canonical JSONL, which is decoded into it
    and encoded from it as it is (absent fields are left out); not tracked by the cyclic garbage collector (a list
    holds millions, and none can form a cycle)."""

    text: str
    scores: Mapping[str, float] = EMPTY
    raw: Mapping[str, str] = EMPTY
    tokens: Optional[str] = None
    meta: Mapping[str, str] = EMPTY

    @property
    def words(self) -> list[str]:
        return self.text.split()

    def with_scores(self, **scores: float) -> "Hypothesis":
        """A copy with extra (or replaced) score columns; replaced columns lose their raw value."""
        raw = self.raw if not self.raw or scores.keys().isdisjoint(self.raw) else {
            k: v for k, v in self.raw.items() if k not in scores}
        return _replace(self, scores={**self.scores, **scores}, raw=raw)

    def with_score(self, name: str, value: float) -> "Hypothesis":
        """:meth:`with_scores` of one column (re-ranking adds one to millions of hypotheses)."""
        if name in self.raw:
            return self.with_scores(**{name: value})
        scores = dict(self.scores)
        scores[name] = value
        return _replace(self, scores=scores)


_replace = msgspec.structs.replace


@dataclass(frozen=True, slots=True)
class Utterance:
    """An utterance (or source sentence): its id, reference and ranked hypotheses."""

    id: str
    hyps: tuple[Hypothesis, ...]
    ref: str | None = None
    meta: Mapping[str, str] = EMPTY
    origin: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.hyps, tuple):
            object.__setattr__(self, "hyps", tuple(self.hyps))

    def with_hyps(self, hyps: Sequence[Hypothesis]) -> "Utterance":
        """A copy with other hypotheses (the id, reference, meta and origin kept)."""
        return Utterance(self.id, tuple(hyps), self.ref, self.meta, self.origin)


CANONICAL = "jsonl"  # the format every list can be written in without loss (and a hand-built list's)


@dataclass(frozen=True)
class NBest:
    """A whole N-best file: utterances in input order, plus the format it came from."""

    utterances: tuple[Utterance, ...]
    fmt: str = CANONICAL
    meta: Mapping[str, str] = field(default_factory=dict)
    source: str = field(default="", compare=False)
    references: str = field(default="", compare=False)  # the file the references were attached from

    def __post_init__(self) -> None:
        if not isinstance(self.utterances, tuple):
            object.__setattr__(self, "utterances", tuple(self.utterances))

    @property
    def inputs(self) -> list[str]:
        """The files (or directories) this list was read from: the N-best and the references."""
        return [path for path in (self.source, self.references) if path]

    def __len__(self) -> int:
        return len(self.utterances)

    def __iter__(self) -> Iterator[Utterance]:
        return iter(self.utterances)

    def __repr__(self) -> str:
        """One line: the format, the counts and where it came from (``.utterances`` holds the lists)."""
        source = f", source={self.source!r}" if self.source else ""
        return (f"NBest(fmt={self.fmt!r}, {len(self)} utterances, {self.num_hypotheses} hypotheses, "
                f"columns={self.columns}{source})")

    @cached_property
    def num_hypotheses(self) -> int:
        return sum(len(u.hyps) for u in self.utterances)

    @property
    def depth(self) -> int:
        """The most hypotheses any utterance has (an N-best list's N)."""
        return max((len(u.hyps) for u in self.utterances), default=0)

    @property
    def columns(self) -> list[str]:
        """Score column names in first-seen order."""
        return list(self._columns)

    @cached_property
    def _columns(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for utt in self.utterances:
            for hyp in utt.hyps:
                seen.update(dict.fromkeys(hyp.scores))
        return tuple(seen)

    @property
    def has_refs(self) -> bool:
        return bool(self.utterances) and all(u.ref is not None for u in self.utterances)

    def refs(self) -> list[str]:
        return [u.ref if u.ref is not None else "" for u in self.utterances]

    def select(self, ranks: Sequence[int]) -> list[str]:
        """Texts of the hypothesis at ``ranks[i]`` (0-based) of each utterance."""
        return [u.hyps[r].text if u.hyps else "" for u, r in zip(self.utterances, ranks)]

    def with_utterances(self, utterances: Sequence[Utterance]) -> "NBest":
        return replace(self, utterances=tuple(utterances))

    def texts(self) -> list[str]:
        """Every hypothesis text, utterance by utterance, best first (the order ``with_columns`` takes)."""
        return [h.text for u in self.utterances for h in u.hyps]

    def column_array(self, name: str) -> np.ndarray:
        """Score column ``name`` of every hypothesis as float64 ``[hypotheses]`` in ``texts()`` order, in one pass
        (KeyError where a hypothesis lacks it)."""
        return np.fromiter(map(itemgetter(name), self._score_maps), dtype=np.float64, count=self.num_hypotheses)

    @cached_property
    def _score_maps(self) -> list[Mapping[str, float]]:
        return [h.scores for u in self.utterances for h in u.hyps]

    def with_columns(self, columns: Mapping[str, Sequence[float]]) -> "NBest":
        """A copy with score columns added, one value per hypothesis in ``texts()`` order."""
        for name, values in columns.items():
            if len(values) != self.num_hypotheses:
                raise ValueError(f"column {name!r} has {len(values)} values for {self.num_hypotheses} hypotheses")
        if not columns:
            return self
        at = iter(range(self.num_hypotheses))
        utterances = []
        for utt in self.utterances:
            hyps = []
            for hyp in utt.hyps:
                i = next(at)
                hyps.append(hyp.with_scores(**{name: float(values[i]) for name, values in columns.items()}))
            utterances.append(utt.with_hyps(hyps))
        return self.with_utterances(utterances)
