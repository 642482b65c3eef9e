"""A canonical JSONL shard re-ranked as it is read, a piece at a time, without a Python object per hypothesis: each
line's hypotheses sorted by their interpolated total (stable) and written back with it as column ``rescore``. The
bytes are those of reading the shard, re-ranking it and writing it back (:mod:`rescorer.pipeline.shards`). A shard
that is not plain goes that way instead: an id that is not a string, an integer, infinite or non-numeric score (the
reader converts or refuses them), a key given twice, an empty ``raw`` or ``meta``, a hypothesis without a column the
weights use, a scorer that reads context."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np

from ..changes import Change, changed
from ..combine import Features, totals
from ..combine.interpolate import WORD_COUNT_COLUMN, needs_words
from ..engine import BoundScorer
from ..errors import NBestFormatError
from ..files import write_lines
from ..io.common import check_keys, iter_lines, json_line, load_json
from ..io.jsonformats import header_lines, header_meta
from ..metrics import Metric
from ..report import SetReport
from ..types import CANONICAL
from .rerank import RESCORE_COLUMN, best_first
from .tuned import Tuned

UTTERANCE_KEYS = frozenset({"id", "ref", "hyps", "meta"})
REF_TYPES = (str, type(None))
HYPOTHESIS_KEYS = frozenset(("text", "scores", *extra) for extra in (  # in the order they are written
    (), ("raw",), ("tokens",), ("meta",), ("raw", "tokens"), ("raw", "meta"), ("tokens", "meta"),
    ("raw", "tokens", "meta")))


PIECE = 1024  # utterances re-ranked together when nothing is scored: a piece stays in the processor's caches


class NotPlain(Exception):
    """The shard needs the general path (read whole, re-ranked, written)."""


def _not_plain(_: str) -> Any:
    raise NotPlain


_DECODE = json.JSONDecoder(parse_int=_not_plain, parse_constant=_not_plain).decode  # an integer or NaN: not plain


@dataclass
class Tally:
    """What a shard held and what changed, counted as its lines go by."""

    utterances: int = 0
    hypotheses: int = 0
    depth: int = 0
    changed: int = 0
    changes: list[Change] = field(default_factory=list)

    def entry(self) -> SetReport:
        """The shard's report entry."""
        return SetReport(format=CANONICAL, utterances=self.utterances, hypotheses=self.hypotheses, references=False,
                         changed_1best=self.changed)


def rerank_lines(source: Path, out: Path, tuned: Tuned, scorers: Mapping[str, BoundScorer], metric: Metric,
                 weights: np.ndarray, chunk: int, examples: int) -> Tally:
    """Re-rank the plain JSONL shard ``source`` into ``out`` (atomically), ``chunk`` utterances at a time; what it
    held and up to ``examples`` changed 1-bests. :class:`NotPlain` (nothing written) where it is not plain."""
    if any(scorer.context is not None for scorer in scorers.values()):
        raise NotPlain
    tally = Tally()
    piece = chunk if scorers else min(chunk, PIECE)
    write_lines(out, _written(source, piece, tuned, scorers, metric, weights, tally, examples))
    return tally


def _written(source: Path, chunk: int, tuned: Tuned, scorers: Mapping[str, BoundScorer], metric: Metric,
             weights: np.ndarray, tally: Tally, examples: int) -> Iterator[str]:
    """The shard's lines as written: its header line as read, then its utterances re-ranked."""
    header: list[str] = []
    for k, part in enumerate(_parts(source, chunk, header)):
        yield from header if k == 0 else ()
        yield from _reranked(part, tuned, scorers, metric, weights, tally, examples)


def _parts(source: Path, chunk: int, header: list[str]) -> Iterator[list[dict]]:
    """The shard's utterances, ``chunk`` at a time, each checked to be plain; a header line's own line (as it is
    written back) goes to ``header`` before the first."""
    part: list[dict] = []
    seen: set[str] = set()
    try:
        for number, line in iter_lines(source):
            if not line.strip():
                continue
            obj = _DECODE(line)
            if not seen and (meta := header_meta(obj, source, number)) is not None:
                load_json(line, source, number)  # no key twice
                header[:] = header_lines(meta)
                continue
            check_keys(line, _plain(obj, line, seen), source, number)
            part.append(obj)
            if len(part) == chunk:
                yield part
                part = []
    except (ValueError, TypeError, NBestFormatError):  # the general path says what is wrong with it
        raise NotPlain from None
    if not seen:
        raise NotPlain
    if part:
        yield part


def _plain(obj: Any, line: str, seen: set[str]) -> int:
    """How many keys the objects of ``obj`` (decoded from ``line``) hold, if it is a plain utterance: ``{"id": str,
    "ref": str|null, "hyps": [{"text": str, "scores": {name: finite float}, "raw"?: {name: str}, "tokens"?: str,
    "meta"?: {str: str}}], "meta"?: {str: str}}`` (the optional keys in this order, their objects not empty), its id
    new."""
    if type(obj) is not dict or not obj.keys() <= UTTERANCE_KEYS or type(obj.get("id")) is not str \
            or obj["id"] in seen or type(obj.get("hyps")) is not list or type(obj.get("ref", "")) not in REF_TYPES:
        raise NotPlain
    seen.add(obj["id"])
    keys = len(obj) + (_strings(obj["meta"]) if "meta" in obj else 0)
    finite = math.isfinite
    for hyp in obj["hyps"]:
        if type(hyp) is not dict or tuple(hyp) not in HYPOTHESIS_KEYS or type(hyp["text"]) is not str \
                or type(scores := hyp["scores"]) is not dict or not finite(sum(scores.values())):
            raise NotPlain  # (a value that is no number raises TypeError)
        keys += len(hyp) + len(scores)
        if len(hyp) > 2:
            keys += sum(_strings(hyp[name]) for name in ("raw", "meta") if name in hyp)
            if type(hyp.get("tokens", "")) is not str:
                raise NotPlain
    if ("true" in line or "false" in line) and any(type(value) is bool for hyp in obj["hyps"]
                                                   for value in hyp["scores"].values()):
        raise NotPlain
    return keys


def _strings(value: Any) -> int:
    """How many keys ``value`` has, if it is an object of strings that is not empty."""
    if type(value) is not dict or not value or any(type(text) is not str for text in value.values()):
        raise NotPlain
    return len(value)


def _reranked(part: list[dict], tuned: Tuned, scorers: Mapping[str, BoundScorer], metric: Metric,
              weights: np.ndarray, tally: Tally, examples: int) -> Iterator[str]:
    """The lines of ``part`` re-ranked, counted in ``tally``."""
    hyps = [hyp for utt in part for hyp in utt["hyps"]]
    counts = np.fromiter((len(utt["hyps"]) for utt in part), dtype=np.int64, count=len(part))
    added = {name: scorer.compute([hyp["text"] for hyp in hyps]) for name, scorer in scorers.items()}
    if added and any(name in hyp["scores"] for hyp in hyps for name in added):  # refused there: it would replace
        raise NotPlain  # an input column
    features = _features(hyps, counts, tuned, added)
    scores = totals(features, weights)
    for i, (hyp, total) in enumerate(zip(hyps, scores[features.valid].tolist())):  # the decoded line is ours to change
        for name, scored in added.items():
            hyp["scores"][name] = float(scored.totals[i])
        hyp["scores"][RESCORE_COLUMN] = total
        if "raw" in hyp:  # a column given anew loses the text it was read from
            _replaced(hyp, [*added, RESCORE_COLUMN])
    before, after = [], []
    for utt, order in zip(part, best_first(scores)):
        given = utt["hyps"]
        new = [given[k] for k in order[: len(given)]]
        before.append(given[0]["text"] if given else "")
        after.append(new[0]["text"] if new else "")
        written = {"id": utt["id"], "ref": utt.get("ref"), "hyps": new}
        if "meta" in utt:
            written["meta"] = utt["meta"]
        yield json_line(written) + "\n"
    found = changed([utt["id"] for utt in part], before, after, [utt.get("ref") for utt in part], metric)
    tally.utterances, tally.hypotheses = tally.utterances + len(part), tally.hypotheses + len(hyps)
    tally.depth, tally.changed = max(tally.depth, int(counts.max(initial=0))), tally.changed + len(found)
    tally.changes += found[: examples - len(tally.changes)]


def _replaced(hyp: dict, columns: list[str]) -> None:
    """``hyp`` without the raw texts of ``columns``, and without ``raw`` where none is left."""
    raw = hyp["raw"]
    for name in columns:
        raw.pop(name, None)
    if not raw:
        del hyp["raw"]


def _features(hyps: list[dict], counts: np.ndarray, tuned: Tuned, added: Mapping[str, Any]) -> Features:
    """The tuned columns of every hypothesis: input scores, scorer totals or the word count."""
    columns = [tuned.base, *tuned.columns]
    words = np.fromiter((len(hyp["text"].split()) for hyp in hyps), dtype=float, count=len(hyps)) \
        if needs_words(columns) else None
    flat, lengths = [], []
    for column in columns:
        if column.name in added:
            flat.append(np.asarray(added[column.name].totals, dtype=float))
            lengths.append(np.array([len(t) for t in added[column.name].tokens], dtype=float))
            continue
        if column.name == WORD_COUNT_COLUMN:
            if any(WORD_COUNT_COLUMN in hyp["scores"] for hyp in hyps):  # refused there: it clashes
                raise NotPlain
            flat.append(words)
        else:
            try:
                flat.append(np.fromiter((hyp["scores"][column.name] for hyp in hyps), dtype=float, count=len(hyps)))
            except KeyError:  # said there, naming the utterance
                raise NotPlain from None
        lengths.append(words)
    return Features.gathered(columns, counts, flat, lengths)

