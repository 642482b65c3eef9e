"""JSON-based formats: the canonical JSONL, Sockeye 3 JSON lines, awslabs/mlm-scoring JSON.

Canonical JSONL (ours): one utterance per line,
``{"id": str, "ref": str|null, "hyps": [{"text": str, "scores": {name: float}, "raw"?: {name: str},
"tokens"?: str, "meta"?: {str: str}}], "meta"?: {str: str}}``; hypotheses best first,
scores natural log, higher = better. An optional first line ``{"nbest": {"fmt": str, "meta": {str: str}}}``
names the format the ``raw`` values and ``meta`` were read from, and keeps what that format needs to write
them back (e.g. fairseq's ``log_base``); they are written verbatim only to that format.
"""
from __future__ import annotations

import json
import math
import re
from itertools import chain
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from ..errors import NBestFormatError
from ..files import write_lines, write_text
from ..types import CANONICAL, EMPTY, Hypothesis, NBest, Utterance
from .common import (check_keys, find_key, format_number, iter_lines, json_line, json_score, load_json, parse_score,
                     read_text, require_ranks)
from .format import Sample
from .target import NATIVE_KEY, Target

_HYP_KEY = re.compile(r"^hyp_(\d+)$")
_INT_ID = re.compile(r"0|[1-9][0-9]*")


def _json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(number, value) of each non-blank line, read one at a time."""
    for number, line in iter_lines(path):
        if line.strip():
            yield number, load_json(line, path, number)


def _number(value: Any, path: Path, line: int, column: str) -> tuple[float, str]:
    if type(value) is float and -math.inf < value < math.inf:  # the usual case, fast
        return value, repr(value)
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise NBestFormatError(path, line, f"{column} is not a number", value)
    raw = value if isinstance(value, str) else json.dumps(value)
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


def read_jsonl(path: str | Path) -> NBest:
    path = Path(path)
    utterances, seen, meta_of_list = [], set(), {}
    for number, line in iter_lines(path):
        if not line.strip():
            continue
        obj = load_json(line, path, number, strict=False)
        try:
            if not utterances and not seen and (found := header_meta(obj, path, number)) is not None:
                meta_of_list = found
                load_json(line, path, number)
                continue
            utterance, keys = _utterance(obj, path, number, seen)
        except NBestFormatError:
            load_json(line, path, number)  # a key given twice is said first
            raise
        check_keys(line, keys, path, number)
        utterances.append(utterance)
    return NBest(utterances, fmt="jsonl", meta=meta_of_list, source=str(path))


def _utterance(obj: Any, path: Path, number: int, seen: set[str]) -> tuple[Utterance, int]:
    """The utterance of line ``number`` (its id not in ``seen``, then added), and how many keys its objects hold."""
    if not isinstance(obj, dict) or "id" not in obj or not isinstance(obj.get("hyps"), list):
        raise NBestFormatError(path, number, "expected an object with 'id' and a 'hyps' list", obj)
    uid = str(obj["id"])
    if uid in seen:
        raise NBestFormatError(path, number, "duplicate utterance id", uid)
    seen.add(uid)
    hyps, keys = [], len(obj)
    for h in obj["hyps"]:
        if not isinstance(h, dict) or not isinstance(h.get("text"), str):
            raise NBestFormatError(path, number, "hypothesis lacks a 'text' string", h)
        raw = _strings(h["raw"], path, number, "'raw'") if "raw" in h else EMPTY
        meta = _strings(h["meta"], path, number, "'meta'") if "meta" in h else EMPTY
        scores = _scores(h.get("scores", EMPTY), path, number)
        hyps.append(Hypothesis(h["text"], scores, raw, h.get("tokens"), meta))
        keys += len(h) + len(h.get("scores", EMPTY)) + len(raw) + len(meta)
    ref = obj.get("ref")
    if ref is not None and not isinstance(ref, str):
        raise NBestFormatError(path, number, "'ref' must be a string or null", ref)
    meta = _strings(obj["meta"], path, number, "'meta'") if "meta" in obj else EMPTY
    return Utterance(uid, tuple(hyps), ref, meta, origin=f"{path}:{number}"), keys + len(meta)


def header_meta(obj: Any, path: Path, number: int) -> dict[str, str] | None:
    """The list's meta from a header line ``{"nbest": {"fmt": str, "meta": {str: str}}}`` (the format its raw
    values and meta were read from under :data:`NATIVE_KEY`, unless ``jsonl``); None if ``obj`` is no header."""
    if not isinstance(obj, dict) or set(obj) != {"nbest"}:
        return None
    header = obj["nbest"]
    if not isinstance(header, dict) or not isinstance(header.get("meta", {}), dict):
        raise NBestFormatError(path, number, "'nbest' header must be {'fmt': str, 'meta': {str: str}}", obj)
    _strings(header.get("meta", {}), path, number, "'nbest.meta'")
    native = {NATIVE_KEY: header["fmt"]} if isinstance(header.get("fmt"), str) and header["fmt"] != "jsonl" else {}
    return {**header.get("meta", {}), **native}


def header_lines(meta: Mapping[str, str], fmt: str = CANONICAL) -> list[str]:
    """The header line of a list of format ``fmt`` with ``meta`` (none where it would say nothing)."""
    native = meta.get(NATIVE_KEY) or fmt
    kept = {k: v for k, v in meta.items() if k != NATIVE_KEY}
    return [json.dumps({"nbest": {"fmt": native, "meta": kept}}) + "\n"] if kept or native != CANONICAL else []


def jsonl_line(utt: Utterance) -> str:
    hyps = []
    for h in utt.hyps:
        scores = h.scores
        if not isinstance(scores, dict) or not math.isfinite(sum(scores.values())):  # rare: another mapping, or a
            scores = {k: v if math.isfinite(v) else format_number(v) for k, v in scores.items()}  # ±inf ("-inf")
        item: dict[str, Any] = {"text": h.text, "scores": scores}
        if h.raw:
            item["raw"] = dict(h.raw)
        if h.tokens is not None:
            item["tokens"] = h.tokens
        if h.meta:
            item["meta"] = dict(h.meta)
        hyps.append(item)
    obj: dict[str, Any] = {"id": utt.id, "ref": utt.ref, "hyps": hyps}
    if utt.meta:
        obj["meta"] = dict(utt.meta)
    return json_line(obj)


def write_jsonl(nbest: NBest, path: str | Path) -> None:
    """Every column, raw value and meta; the header names the format they were read from."""
    write_lines(path, jsonl_lines(nbest))


def jsonl_lines(nbest: NBest, utterances: Iterable[Utterance] | None = None) -> Iterator[str]:
    """The lines of ``nbest`` as canonical JSONL, made one at a time (``utterances``: others in place of its own,
    such as its utterances re-ranked, made as they are written)."""
    body = nbest if utterances is None else utterances
    return chain(header_lines(nbest.meta, nbest.fmt), (jsonl_line(u) + "\n" for u in body))


# ---------------------------------------------------------------- Sockeye 3
def detect_sockeye(sample: Sample) -> bool:
    """Sockeye JSON lines: a first line with ``translation`` or ``translations``."""
    return sample.head is not None and ("translation" in sample.head or "translations" in sample.head)


def read_sockeye(path: str | Path) -> NBest:
    """Sockeye ``--output-type json`` n-best: scores are negative log-probs (lower is better) and are negated."""
    path = Path(path)
    utterances, factored, seen = [], False, set()
    for number, obj in _json_lines(path):
        if not isinstance(obj, dict) or "translation" not in obj and "translations" not in obj:
            raise NBestFormatError(path, number, "expected a Sockeye object with 'translation(s)'", obj)
        texts = obj.get("translations", [obj.get("translation")])
        scores = obj.get("scores", [obj.get("score")])
        if not isinstance(texts, list) or not isinstance(scores, list) or len(texts) != len(scores):
            raise NBestFormatError(path, number, "'translations' and 'scores' differ in length", obj)
        hyps = []
        for text, score in zip(texts, scores):
            factors = score if isinstance(score, list) else [score]
            factored = factored or isinstance(score, list)
            value, raw = _number(factors[0] if factors else None, path, number, "score")
            meta = {"factors": json.dumps(factors[1:])} if len(factors) > 1 else {}
            if not isinstance(text, str):
                raise NBestFormatError(path, number, "translation is not a string", text)
            hyps.append(Hypothesis(text, {"score": -value}, {"score": raw}, meta=meta))
        sid = str(obj.get("sentence_id", number))
        if sid in seen:
            raise NBestFormatError(path, number, "duplicate sentence_id", sid)
        seen.add(sid)
        rest = {k: json.dumps(v) for k, v in obj.items() if k not in ("sentence_id", "translation", "translations", "score", "scores")}
        utterances.append(Utterance(sid, tuple(hyps), meta=rest, origin=f"{path}:{number}"))
    return NBest(utterances, fmt="sockeye", meta={"factored": "1" if factored else "0"}, source=str(path))


def write_sockeye(nbest: NBest, path: str | Path, score_column: str | None = None) -> None:
    """One JSON object per utterance; the overall column (:class:`Target`) is written as a cost (negated)."""
    target = Target.of(nbest, "sockeye", path, score_column)
    factored = target.meta(nbest.meta).get("factored") == "1"
    lines = []
    for utt in nbest:
        scores = []
        for h in utt.hyps:
            cost = json_score(target.value(utt, h, target.overall(utt, h), lambda v: -v))
            factors = [cost] + json.loads(target.meta(h.meta).get("factors", "[]"))
            scores.append(factors if factored or len(factors) > 1 else cost)
        obj: dict[str, Any] = {"sentence_id": int(utt.id) if _INT_ID.fullmatch(utt.id) else utt.id}
        if utt.hyps:
            obj["translation"] = utt.hyps[0].text
            obj["score"] = scores[0]
        obj["translations"] = [h.text for h in utt.hyps]
        obj["scores"] = scores
        obj.update({k: json.loads(v) for k, v in target.meta(utt.meta).items()})
        lines.append(json_line(obj))
    write_text(path, "".join(f"{line}\n" for line in lines))


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
    write_text(path, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
