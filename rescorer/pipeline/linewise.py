"""A canonical JSONL shard re-ranked as it is read, a block of lines at a time, without a Python object per
hypothesis: each line's hypotheses sorted by their interpolated total (stable) and written back with it as column
``rescore``. The bytes are those of reading the shard, re-ranking it and writing it back
(:mod:`rescorer.pipeline.shards`). A shard that is not plain goes that way instead: an id that is not a string, an
integer, infinite or non-numeric score (the reader converts or refuses them), a key given twice, an empty ``raw`` or
``meta``, a hypothesis without a column the weights use, a scorer that reads context, a blank line or one with space
around its object."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np

from ..changes import Change, changed
from ..combine import Features, totals
from ..combine.interpolate import WORD_COUNT_COLUMN, needs_words
from ..engine import BoundScorer
from ..errors import NBestFormatError
from ..files import write_lines
from ..io.common import check_keys, json_line, load_json
from ..io.jsonformats import header_lines, header_meta
from ..metrics import Metric
from ..report import SetReport
from ..types import CANONICAL
from .rerank import RESCORE_COLUMN, best_first
from .tuned import Tuned

UTTERANCE_KEYS = frozenset({"id", "ref", "hyps", "meta"})
REF_TYPES = (str, type(None))
HYPS, TEXT, SCORES = map(itemgetter, ("hyps", "text", "scores"))
HYPOTHESIS_KEYS = frozenset(("text", "scores", *extra) for extra in (  # in the order they are written
    (), ("raw",), ("tokens",), ("meta",), ("raw", "tokens"), ("raw", "meta"), ("tokens", "meta"),
    ("raw", "tokens", "meta")))


BLOCK = 1 << 17  # bytes of lines re-ranked together when nothing is scored: their objects stay in the caches


class NotPlain(Exception):
    """The shard needs the general path (read whole, re-ranked, written)."""


def _not_plain(_: str) -> Any:
    raise NotPlain


_DECODE = json.JSONDecoder(parse_int=_not_plain, parse_constant=_not_plain).raw_decode  # no integer, no NaN


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
    write_lines(out, _written(source, chunk if scorers else 0, tuned, scorers, metric, weights, tally, examples))
    return tally


def _written(source: Path, chunk: int, tuned: Tuned, scorers: Mapping[str, BoundScorer], metric: Metric,
             weights: np.ndarray, tally: Tally, examples: int) -> Iterator[str]:
    """The shard's text as written, a piece at a time: its header line as read, then its utterances re-ranked."""
    header: list[str] = []
    for k, part in enumerate(_parts(source, chunk, header)):
        yield from header if k == 0 else ()
        yield _reranked(part, tuned, scorers, metric, weights, tally, examples)


def _parts(source: Path, chunk: int, header: list[str]) -> Iterator[list[dict]]:
    """The shard's utterances, each checked to be plain: ``chunk`` at a time, or a block at a time where ``chunk`` is
    0; a header line's own line (as it is written back) goes to ``header`` before the first."""
    part: list[dict] = []
    seen: set[str] = set()
    try:
        for k, text in enumerate(_blocks(source)):
            part += _block(text, k == 0, seen, header, source)
            size = chunk or len(part)
            while part and len(part) >= size:
                yield part[:size]
                part = part[size:]
    except (ValueError, TypeError, NBestFormatError):  # the general path says what is wrong with it
        raise NotPlain from None
    if not seen:
        raise NotPlain
    if part:
        yield part


def _blocks(source: Path) -> Iterator[str]:
    """The shard's text, whole lines of about :data:`BLOCK` bytes at a time (a byte-order mark dropped)."""
    with source.open("rb") as handle:
        for k, lines in enumerate(iter(lambda: handle.readlines(BLOCK), [])):
            text = b"".join(lines).decode("utf-8")
            yield text.removeprefix("\ufeff") if k == 0 else text


def _block(text: str, first: bool, seen: set[str], header: list[str], source: Path) -> list[dict]:
    """The utterances of ``text`` (whole lines), each line one plain utterance, its id new (the shard's first line
    may be its header instead)."""
    utterances, keys, spans = [], [], []
    at, size, bools = 0, len(text), "true" in text or "false" in text
    while at < size:
        obj, end = _DECODE(text, at)
        after = end + 1 if text.startswith("\n", end) else end + 2 if text.startswith("\r\n", end) else end
        if after == end < size:  # more than one value, or space, on a line
            raise NotPlain
        if first and at == 0 and (meta := header_meta(obj, source, 1)) is not None:
            load_json(text[:end], source, 1)  # no key twice
            header[:] = header_lines(meta)
        else:
            keys.append(_plain(obj, bools, seen))
            utterances.append(obj)
            spans.append((at, end))
        at = after
    if utterances and text.count(":", spans[0][0]) != sum(keys):  # some line has a colon that is no key's
        for (start, end), count in zip(spans, keys):
            check_keys(text[start:end], count, source)
    return utterances


def _plain(obj: Any, bools: bool, seen: set[str]) -> int:
    """How many keys the objects of ``obj`` hold, if it is a plain utterance: ``{"id": str, "ref": str|null,
    "hyps": [{"text": str, "scores": {name: finite float}, "raw"?: {name: str}, "tokens"?: str, "meta"?: {str:
    str}}], "meta"?: {str: str}}`` (the optional keys in this order, their objects not empty), its id new; ``bools``:
    whether its text may hold a ``true`` or ``false``."""
    if type(obj) is not dict or not obj.keys() <= UTTERANCE_KEYS or type(obj.get("id")) is not str \
            or obj["id"] in seen or type(obj.get("hyps")) is not list or type(obj.get("ref", "")) not in REF_TYPES:
        raise NotPlain
    seen.add(obj["id"])
    keys = len(obj) + (_strings(obj["meta"]) if "meta" in obj else 0)
    finite = math.isfinite
    for hyp in obj["hyps"]:  # (a list of key names, or a score that is no number, raises TypeError)
        if tuple(hyp) not in HYPOTHESIS_KEYS or type(hyp["text"]) is not str \
                or type(scores := hyp["scores"]) is not dict or not finite(sum(scores.values())):
            raise NotPlain
        keys += len(hyp) + len(scores)
        if len(hyp) > 2:
            keys += sum(_strings(hyp[name]) for name in ("raw", "meta") if name in hyp)
            if type(hyp.get("tokens", "")) is not str:
                raise NotPlain
    if bools and any(type(value) is bool for hyp in obj["hyps"] for value in hyp["scores"].values()):
        raise NotPlain
    return keys


def _strings(value: Any) -> int:
    """How many keys ``value`` has, if it is an object of strings that is not empty."""
    if type(value) is not dict or not value or any(type(text) is not str for text in value.values()):
        raise NotPlain
    return len(value)


def _reranked(part: list[dict], tuned: Tuned, scorers: Mapping[str, BoundScorer], metric: Metric,
              weights: np.ndarray, tally: Tally, examples: int) -> str:
    """The lines of ``part`` re-ranked, counted in ``tally``."""
    given = list(map(HYPS, part))
    hyps = list(chain.from_iterable(given))
    scores = list(map(SCORES, hyps))  # the decoded lines are ours to change
    counts = np.fromiter(map(len, given), dtype=np.int64, count=len(given))
    added = {name: scorer.compute(list(map(TEXT, hyps))) for name, scorer in scorers.items()}
    if added and any(name in mapping for mapping in scores for name in added):  # refused there: it would replace
        raise NotPlain  # an input column
    features = _features(hyps, scores, counts, tuned, added)
    total = totals(features, weights)
    columns = [*((name, map(float, scored.totals)) for name, scored in added.items()),
               (RESCORE_COLUMN, total[features.valid].tolist())]
    for name, values in columns:
        for mapping, value in zip(scores, values):
            mapping[name] = value
    if max(map(len, hyps), default=0) > 2:  # a column given anew loses the raw text it was read from
        for hyp in hyps:
            if "raw" in hyp:
                _replaced(hyp, [name for name, _ in columns])
    orders, lines = best_first(total), []
    for utt, order in zip(part, orders):
        given = utt["hyps"]
        written = {"id": utt["id"], "ref": utt.get("ref"), "hyps": [given[k] for k in order[: len(given)]]}
        if "meta" in utt:
            written["meta"] = utt["meta"]
        lines.append(json_line(written))
    moved = [(utt, order[0]) for utt, order in zip(part, orders) if order[0]]  # a new 1-best, maybe the same text
    found = changed([utt["id"] for utt, _ in moved], [utt["hyps"][0]["text"] for utt, _ in moved],
                    [utt["hyps"][k]["text"] for utt, k in moved], [utt.get("ref") for utt, _ in moved], metric)
    tally.utterances, tally.hypotheses = tally.utterances + len(part), tally.hypotheses + len(hyps)
    tally.depth, tally.changed = max(tally.depth, int(counts.max(initial=0))), tally.changed + len(found)
    tally.changes += found[: examples - len(tally.changes)]
    lines.append("")
    return "\n".join(lines)


def _replaced(hyp: dict, columns: list[str]) -> None:
    """``hyp`` without the raw texts of ``columns``, and without ``raw`` where none is left."""
    raw = hyp["raw"]
    for name in columns:
        raw.pop(name, None)
    if not raw:
        del hyp["raw"]


def _features(hyps: list[dict], scores: list[dict], counts: np.ndarray, tuned: Tuned,
              added: Mapping[str, Any]) -> Features:
    """The tuned columns of every hypothesis (``scores``: their score mappings): input scores, scorer totals or the
    word count."""
    columns = [tuned.base, *tuned.columns]
    words = np.fromiter(map(len, map(str.split, map(TEXT, hyps))), dtype=float, count=len(hyps)) \
        if needs_words(columns) else None
    flat, lengths = [], []
    for column in columns:
        if column.name in added:
            flat.append(np.asarray(added[column.name].totals, dtype=float))
            lengths.append(np.array([len(t) for t in added[column.name].tokens], dtype=float))
            continue
        if column.name == WORD_COUNT_COLUMN:
            if any(WORD_COUNT_COLUMN in mapping for mapping in scores):  # refused there: it clashes
                raise NotPlain
            flat.append(words)
        else:
            try:
                flat.append(np.fromiter(map(itemgetter(column.name), scores), dtype=float, count=len(scores)))
            except KeyError:  # said there, naming the utterance
                raise NotPlain from None
        lengths.append(words)
    return Features.gathered(columns, counts, flat, lengths)

