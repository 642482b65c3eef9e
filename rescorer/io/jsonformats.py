"""JSON-based formats: the canonical JSONL, Sockeye 3 JSON lines, awslabs/mlm-scoring JSON.

Canonical JSONL (ours): one utterance per line,
``{"id": str, "ref": str|null, "hyps": [{"text": str, "scores": {name: float}, "raw"?: {name: str},
"tokens"?: str, "meta"?: {str: str}}], "meta"?: {str: str}}``; hypotheses best first,
scores natural log, higher = better. An optional first line ``{"nbest": {"fmt": str, "meta": {str: str}}}``
names the format the ``raw`` values and ``meta`` were read from, and keeps what that format needs to write
them back (e.g. fairseq's ``log_base``); they are written verbatim only to that format.
"""
from __future__ import annotations

import contextlib
import math
import re
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterable, Iterator, Mapping, Optional, Union

import msgspec

from ..errors import NBestFormatError
from ..files import atomic_file, write_text
from ..types import CANONICAL, EMPTY, Hypothesis, NBest, Utterance
from .codec import (DecodeError, decoder, document, encode_lines, finite_scores, json_error, json_line, json_lines,
                    load_json, loads, value_text)
from .seen import Seen
from .common import binary_blocks, blocks_of, find_key, json_score, line_writer, parse_score, read_text, require_ranks
from .format import Sample
from .target import NATIVE_KEY, Target

_HYP_KEY = re.compile(r"^hyp_(\d+)$")
_INT_ID = re.compile(r"0|[1-9][0-9]*")


def _number(value: Any, path: Path, line: int, column: str) -> tuple[float, str]:
    if type(value) is float and -math.inf < value < math.inf:  # the usual case, fast
        return value, repr(value)
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise NBestFormatError(path, line, f"{column} is not a number", value)
    raw = value if isinstance(value, str) else value_text(value)
    return parse_score(raw, path, line, column), raw


def _scores(given: Any, path: Path, line: int) -> Mapping[str, float]:
    """A hypothesis' ``scores`` object as read: the parsed dict itself where every value is a finite float (the
    usual case, no copy), else each value converted or refused."""
    if not isinstance(given, dict):
        raise NBestFormatError(path, line, "'scores' must be an object", given)
    for value in given.values():
        if type(value) is not float or not -math.inf < value < math.inf:
            return {k: _number(v, path, line, k)[0] for k, v in given.items()}
    return given


def _strings(value: Any, path: Path, line: int, what: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise NBestFormatError(path, line, f"{what} must be an object of strings", value)
    return value


# ---------------------------------------------------------------- canonical JSONL
def detect_jsonl(sample: Sample) -> bool:
    """Canonical JSONL: a first line that is an utterance with ``hyps`` or the ``{"nbest": …}`` header."""
    return sample.head is not None and ("hyps" in sample.head or set(sample.head) == {"nbest"})


class Line(msgspec.Struct, gc=False, omit_defaults=True, kw_only=True):
    """One line of canonical JSONL: an utterance, decoded and encoded as it is (absent fields are left out)."""

    id: Union[str, int]
    ref: Optional[str] = None
    hyps: tuple[Hypothesis, ...]
    meta: Mapping[str, str] = EMPTY


class Header(msgspec.Struct, forbid_unknown_fields=True):
    """What the optional first line ``{"nbest": {"fmt": …, "meta": {…}}}`` holds."""

    fmt: str = CANONICAL
    meta: dict[str, str] = {}


_LINE = decoder(Line)
BLOCK = 1 << 20  # bytes of whole lines read at a time


def jsonl_blocks(path: str | Path, size: int = 0) -> Iterator[NBest]:
    """The list as blocks of whole utterances, read ~1 MB of lines at a time: ``size`` utterances each (0: as read).
    Errors name the file and line."""
    path = Path(path)
    meta: dict[str, str] | None = None
    seen, made = Seen(), False
    number, found = 0, []
    for block in binary_blocks(path, BLOCK):
        for data in block:
            number += 1
            if not data.strip():
                continue
            if meta is None:
                meta = header_meta(data, path, number)
                if meta is not None:
                    continue
                meta = {}
            found.append(_utterance(data, path, number, seen))
        while found and len(found) >= (size or len(found)):
            cut = size or len(found)
            yield NBest(found[:cut], fmt=CANONICAL, meta=meta, source=str(path))
            found, made = found[cut:], True
    if meta is None:
        raise NBestFormatError(path, None, "file is empty")
    if found or not made:
        yield NBest(found, fmt=CANONICAL, meta=meta, source=str(path))


def _utterance(data: bytes, path: Path, number: int, seen: Seen) -> Utterance:
    """The utterance of line ``number`` (``data``), its id new in ``seen`` (then added)."""
    try:
        line = _LINE(data)
    except msgspec.ValidationError:
        line = _converted(data, path, number)
    except DecodeError as err:
        raise json_error(err, data, path, number) from None
    uid = line.id if type(line.id) is str else str(line.id)
    if uid in seen:
        raise NBestFormatError(path, number, "duplicate utterance id", uid)
    seen.add(uid)
    return Utterance(uid, line.hyps, line.ref, line.meta, f"{path}:{number}")


def _converted(data: bytes, path: Path, number: int) -> Line:
    """Line ``number`` read where it is not in the schema as it stands: scores written as text (``"-inf"``,
    ``"tensor(-1.5)"``) are converted; anything else is refused, naming where in the line it is."""
    obj = load_json(data, path, number)
    hyps = obj.get("hyps") if isinstance(obj, dict) else None
    for hyp in hyps if isinstance(hyps, list) else ():
        scores = hyp.get("scores") if isinstance(hyp, dict) else None
        if isinstance(scores, dict):
            hyp["scores"] = {k: _number(v, path, number, k)[0] for k, v in scores.items()}
    try:
        return msgspec.convert(obj, Line)
    except msgspec.ValidationError as err:
        raise NBestFormatError(path, number, f"not an utterance of canonical JSONL ({err})") from None


def header_meta(data: bytes, path: Path, number: int) -> dict[str, str] | None:
    """The list's meta from a header line ``{"nbest": {"fmt": str, "meta": {str: str}}}`` (the format its raw
    values and meta were read from under :data:`NATIVE_KEY`, unless ``jsonl``); None if line ``data`` is no
    header."""
    obj = load_json(data, path, number)
    if not isinstance(obj, dict) or set(obj) != {"nbest"}:
        return None
    try:
        header = msgspec.convert(obj["nbest"], Header)
    except msgspec.ValidationError:
        raise NBestFormatError(path, number, "'nbest' header must be {'fmt': str, 'meta': {str: str}}", obj) from None
    return {**header.meta, **({NATIVE_KEY: header.fmt} if header.fmt != CANONICAL else {})}


def header_lines(meta: Mapping[str, str], fmt: str = CANONICAL) -> list[str]:
    """The header line of a list of format ``fmt`` with ``meta`` (none where it would say nothing)."""
    native = meta.get(NATIVE_KEY) or fmt
    kept = {k: v for k, v in meta.items() if k != NATIVE_KEY}
    return [json_line({"nbest": {"fmt": native, "meta": kept}}) + "\n"] if kept or native != CANONICAL else []


def jsonl_data(utterances: Iterable[Utterance]) -> bytes:
    """The lines of ``utterances`` in canonical JSONL (UTF-8), each ended by a newline. A score that is not finite is
    written as its text (``"-inf"``): JSON has no number for it."""
    lines = [Line(id=u.id, ref=u.ref, hyps=u.hyps, meta=u.meta) for u in utterances]
    data = encode_lines(lines)
    if b"null" in data:  # only a score JSON cannot hold is written as null: write those as text
        data = encode_lines([Line(id=line.id, ref=line.ref, meta=line.meta, hyps=tuple(
            h if (scores := finite_scores(h.scores)) is h.scores else msgspec.structs.replace(h, scores=scores)
            for h in line.hyps)) for line in lines])
    return data


def write_jsonl(nbest: NBest, path: str | Path) -> None:
    """Every column, raw value and meta; the header names the format they were read from."""
    with jsonl_writer(path, nbest) as write:
        write(nbest)


@contextlib.contextmanager
def jsonl_writer(path: str | Path, like: NBest) -> Iterator[Callable[[NBest], None]]:
    """A writer of canonical JSONL blocks (the header from ``like``'s fmt and meta), in place when the context
    ends: a list of any size is written without being whole in memory."""
    with atomic_file(path) as tmp, tmp.open("wb") as out:
        out.writelines(line.encode("utf-8") for line in header_lines(like.meta, like.fmt))
        yield lambda block: out.write(jsonl_data(block.utterances))


# ---------------------------------------------------------------- Sockeye 3
def detect_sockeye(sample: Sample) -> bool:
    """Sockeye JSON lines: a first line with ``translation`` or ``translations``."""
    return sample.head is not None and ("translation" in sample.head or "translations" in sample.head)


def sockeye_blocks(path: str | Path, size: int = 0) -> Iterator[NBest]:
    """Sockeye ``--output-type json`` n-best as blocks of ``size`` utterances, a line at a time: scores are negative
    log-probs (lower is better) and are negated. Whether scores hold factors (lists) is the first line's say."""
    path = Path(path)
    facts: dict[str, str] = {}

    def nbest(utterances: list[Utterance]) -> NBest:
        return NBest(utterances, fmt="sockeye", meta={"factored": facts.get("factored", "0")}, source=str(path))
    yield from blocks_of(_sockeye_utterances(path, facts), size, nbest)


def _sockeye_utterances(path: Path, facts: dict[str, str]) -> Iterator[Utterance]:
    """The utterances of a Sockeye file, a line each; ``facts["factored"]``: whether the first line's scores are
    lists."""
    seen = Seen()
    for number, obj in json_lines(path):
        if not isinstance(obj, dict) or "translation" not in obj and "translations" not in obj:
            raise NBestFormatError(path, number, "expected a Sockeye object with 'translation(s)'", obj)
        texts = obj.get("translations", [obj.get("translation")])
        scores = obj.get("scores", [obj.get("score")])
        if not isinstance(texts, list) or not isinstance(scores, list) or len(texts) != len(scores):
            raise NBestFormatError(path, number, "'translations' and 'scores' differ in length", obj)
        facts.setdefault("factored", "1" if any(isinstance(score, list) for score in scores) else "0")
        hyps = []
        for text, score in zip(texts, scores):
            factors = score if isinstance(score, list) else [score]
            value, raw = _number(factors[0] if factors else None, path, number, "score")
            meta = {"factors": value_text(factors[1:])} if len(factors) > 1 else {}
            if not isinstance(text, str):
                raise NBestFormatError(path, number, "translation is not a string", text)
            hyps.append(Hypothesis(text, {"score": -value}, {"score": raw}, meta=meta))
        sid = str(obj.get("sentence_id", number))
        if sid in seen:
            raise NBestFormatError(path, number, "duplicate sentence_id", sid)
        seen.add(sid)
        rest = {k: value_text(v) for k, v in obj.items()
                if k not in ("sentence_id", "translation", "translations", "score", "scores")}
        yield Utterance(sid, tuple(hyps), meta=rest, origin=f"{path}:{number}")


def write_sockeye(nbest: NBest, path: str | Path, score_column: str | None = None) -> None:
    """One JSON object per utterance; the overall column (:class:`Target`) is written as a cost (negated)."""
    with sockeye_writer(path, nbest, score_column) as write:
        write(nbest)


def sockeye_writer(path: str | Path, like: NBest, score_column: str | None = None
                   ) -> ContextManager[Callable[[NBest], None]]:
    """A writer of the blocks of a list like ``like`` (see :func:`write_sockeye`)."""
    target = Target.of(like, "sockeye", path, score_column)
    factored = target.meta(like.meta).get("factored") == "1"

    def lines(block: NBest) -> Iterator[str]:
        for utt in block:
            scores = []
            for h in utt.hyps:
                cost = json_score(target.value(utt, h, target.overall(utt, h), lambda v: -v))
                factors = [cost] + loads(target.meta(h.meta).get("factors", "[]"))
                scores.append(factors if factored or len(factors) > 1 else cost)
            obj: dict[str, Any] = {"sentence_id": int(utt.id) if _INT_ID.fullmatch(utt.id) else utt.id}
            if utt.hyps:
                obj["translation"] = utt.hyps[0].text
                obj["score"] = scores[0]
            obj["translations"] = [h.text for h in utt.hyps]
            obj["scores"] = scores
            obj.update({k: loads(v) for k, v in target.meta(utt.meta).items()})
            yield json_line(obj)
    return line_writer(path, lines)


# ---------------------------------------------------------------- awslabs/mlm-scoring
def detect_mlm_scoring(sample: Sample) -> bool:
    """An object of utterances, each holding ``hyp_<k>`` entries."""
    doc = sample.document
    return doc is not None and all(isinstance(v, dict) and any(k.startswith("hyp_") for k in v) for v in doc.values())


def read_mlm_scoring(path: str | Path) -> NBest:
    """``{utt: {"ref": str, "hyp_<k>": {"score", "text"}}}``; utterances in sorted key order, text stripped."""
    path = Path(path)
    text = read_text(path)
    doc = load_json(text, path)
    if not isinstance(doc, dict):
        raise NBestFormatError(path, 1, "expected a JSON object of utterances", text[:40])
    utterances = []
    for uid in sorted(doc):
        entry = doc[uid]
        line, at = find_key(text, uid)
        if not isinstance(entry, dict):
            raise NBestFormatError(path, line, "utterance entry is not an object", entry)
        ranked = []
        for key, value in entry.items():
            if key == "ref":
                continue
            where = find_key(text, key, at)[0] or line
            match = _HYP_KEY.match(key)
            if not match or not isinstance(value, dict) or not isinstance(value.get("text"), str) or "score" not in value:
                raise NBestFormatError(path, where, "expected 'hyp_<k>': {'score', 'text'}", {key: value})
            score, raw = _number(value["score"], path, where, "score")
            ranked.append((int(match.group(1)), Hypothesis(value["text"].strip(), {"score": score}, {"score": raw})))
        require_ranks([r for r, _ in ranked], path, line, uid)
        ref = entry.get("ref")
        if ref is not None and not isinstance(ref, str):
            raise NBestFormatError(path, line, "'ref' must be a string", ref)
        hyps = tuple(h for _, h in sorted(ranked, key=lambda p: p[0]))
        utterances.append(Utterance(uid, hyps, ref.strip() if ref is not None else None, origin=f"{path}:{line}"))
    return NBest(utterances, fmt="mlm-scoring", source=str(path))


def write_mlm_scoring(nbest: NBest, path: str | Path, score_column: str | None = None) -> None:
    """``{id: {"ref", "hyp_<k>": {"score", "text"}}}`` with the overall column (:class:`Target`) as the score."""
    target = Target.of(nbest, "mlm-scoring", path, score_column)
    doc: dict[str, Any] = {}
    for utt in nbest:
        entry: dict[str, Any] = {} if utt.ref is None else {"ref": utt.ref}
        for rank, h in enumerate(utt.hyps, 1):
            entry[f"hyp_{rank}"] = {"score": json_score(target.value(utt, h, target.overall(utt, h))), "text": h.text}
        doc[utt.id] = entry
    write_text(path, document(doc, indent=2))
