"""Records: HyPoradise JSON, and any JSON / JSONL / CSV / TSV read through a field mapping (``fmt=fields``).

A :class:`Fields` mapping says which field holds the id, the hypotheses, the reference and each score column:

- one record per utterance (``rank`` unset): ``hyps`` is a list of hypothesis strings, best first, and each score
  field a list of numbers beside it; no ``id`` field (or a record without it) means the record index;
- one record per hypothesis (``rank`` set): ``hyps`` is the hypothesis text, ``rank`` orders an utterance's
  hypotheses (0- or 1-based), ``id`` groups them (required), each score field is one number.

HyPoradise (``fmt=hyporadise``) is the first kind in a JSON list: ``input`` (hypotheses), ``output`` (reference),
optional ``am_score`` and ``id``; ``am_score`` and every other field holding a list of numbers as long as ``input``
(``score``, …) is a column under its own name. Fields the mapping does not name (HyPoradise's ``instruction``, …)
are kept and written back in place; so is the file's JSON layout (indentation, ASCII escapes).
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, Iterator, Mapping

from ..errors import ConfigError, NBestFormatError, check_known
from ..types import Hypothesis, NBest, Utterance
from .codec import DecodeError, json_line, load_json, loads, value_text
from .common import is_number_text, parse_score, read_text, split_lines
from .format import Sample

CONTAINERS = ("auto", "json", "jsonl", "csv", "tsv")
SUFFIXES = {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "tsv", ".tab": "tsv"}
SKELETON = "record"  # Utterance/Hypothesis meta key: the record (row) as read, mapped fields emptied


@dataclass(frozen=True)
class Fields:
    """Which field holds what (module docstring); ``container`` is the file kind (``auto``: by suffix, else content)."""

    hyps: str = "hyps"
    ref: str | None = None
    id: str | None = None
    scores: tuple[str, ...] = ()
    rank: str | None = None
    container: str = "auto"

    @classmethod
    def of(cls, options: Mapping[str, Any] | "Fields" | None) -> "Fields":
        """From a mapping (``fields.hyps=input fields.scores=[am_score]``); unknown keys and wrong kinds are errors."""
        if isinstance(options, Fields):
            return options
        options = dict(options or {})
        check_known("fields key", options, (f.name for f in fields(cls)))
        scores = options.get("scores", ())
        options["scores"] = (scores,) if isinstance(scores, str) else tuple(scores or ())
        for key, value in options.items():
            names = value if key == "scores" else (value,)
            if (key in ("hyps", "container") or value is not None) and not all(isinstance(v, str) and v for v in names):
                raise ConfigError(f"fields.{key} must name a field, not {value!r}")
        spec = cls(**options)
        named = [spec.hyps, spec.ref, spec.id, spec.rank, *spec.scores]
        named = [n for n in named if n is not None]
        if len(set(named)) != len(named) or spec.container not in CONTAINERS:
            raise ConfigError(f"fields: each field once and container one of {', '.join(CONTAINERS)}, got {asdict(spec)}")
        if spec.rank is not None and spec.id is None:
            raise ConfigError("fields.rank (one record per hypothesis) needs fields.id to group them")
        return spec

    def dumps(self) -> str:
        return value_text(asdict(self))


HYPORADISE = Fields(hyps="input", ref="output", id="id", scores=("am_score",), container="json")


def container_of(path: Path, given: str, text: str | None = None) -> str:
    """The file kind: as given, else by suffix, else by content (``[`` JSON, ``{`` JSONL, a tab TSV, else CSV)."""
    if given != "auto":
        return given
    if path.suffix.lower() in SUFFIXES:
        return SUFFIXES[path.suffix.lower()]
    head = (text or "").lstrip()[:1]
    first = (text or "").split("\n", 1)[0]
    return {"[": "json", "{": "jsonl"}.get(head) or ("tsv" if "\t" in first else "csv")


def json_layout(text: str) -> dict[str, Any]:
    """How a JSON file was written (``indent``, ``ascii``, final newline), to write it back the same way."""
    lines = split_lines(text)
    indented = next((line for line in lines[1:] if line.strip()), "")
    indent = len(indented) - len(indented.lstrip(" ")) if len(lines) > 1 else None
    return {"indent": indent or None, "ascii": "\\u" in text and text.isascii(), "newline": text.endswith("\n")}


def json_records(text: str, path: Path) -> Iterator[tuple[int, Any]]:
    """(line, record) of a JSON list, each at the line its value starts on."""
    load_json(text, path)  # the whole document first: syntax errors and duplicate keys with their line
    decoder = json.JSONDecoder()
    at = len(text) - len(text.lstrip())
    if text[at : at + 1] != "[":
        raise NBestFormatError(path, text.count("\n", 0, at) + 1, "expected a JSON list of records", text[at : at + 40])
    at += 1
    while True:
        while text[at].isspace() or text[at] == ",":
            at += 1
        if text[at] == "]":
            return
        value, end = decoder.raw_decode(text, at)
        yield text.count("\n", 0, at) + 1, value
        at = end


def table_records(text: str, path: Path, delimiter: str) -> Iterator[tuple[int, dict[str, str]]]:
    """(line, row) of a CSV/TSV file with a header line."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    header = next(reader, None) or []
    if len(set(header)) != len(header) or not all(header):
        raise NBestFormatError(path, 1, "header has an empty or repeated column name", header)
    line = reader.line_num + 1
    for row in reader:
        if row:
            if len(row) != len(header):
                raise NBestFormatError(path, line, f"{len(row)} fields for {len(header)} columns", row)
            yield line, dict(zip(header, row))
        line = reader.line_num + 1


def load_records(path: Path, container: str) -> tuple[str, list[tuple[int, Any]], dict[str, Any]]:
    """The file's records with their lines, its container and what writing it back needs (layout, header)."""
    text = read_text(path)
    container = container_of(path, container, text)
    if container == "json":
        return container, list(json_records(text, path)), json_layout(text)
    if container == "jsonl":
        rows = [(n, load_json(line, path, n)) for n, line in enumerate(split_lines(text), 1) if line.strip()]
        return container, rows, {}
    delimiter = "\t" if container == "tsv" else ","
    rows = list(table_records(text, path, delimiter))
    header = next(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))
    return container, rows, {"header": header}


def score(value: Any, path: Path, line: int, column: str) -> tuple[float, str] | None:
    """A score cell: (value, raw text), or None where it is empty (JSON null, an empty CSV cell)."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise NBestFormatError(path, line, f"{column} is not a number", value)
    raw = value if isinstance(value, str) else value_text(value)
    return parse_score(raw, path, line, column), raw


def text_field(record: Mapping[str, Any], key: str | None, path: Path, line: int, what: str,
               required: bool = False) -> str | None:
    value = record.get(key) if key is not None else None
    if value is None and required:
        raise NBestFormatError(path, line, f"record has no {what} field {key!r}; its fields are", sorted(record))
    if value is not None and not isinstance(value, str):
        raise NBestFormatError(path, line, f"{what} field {key!r} is not a string", value)
    return value


def record_id(record: Mapping[str, Any], spec: Fields, index: int, path: Path, line: int) -> str:
    value = record.get(spec.id) if spec.id is not None else None
    if value is None or value == "":
        return str(index)
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise NBestFormatError(path, line, f"id field {spec.id!r} is not a string or an integer", value)
    return str(value)


def skeleton(record: Mapping[str, Any], spec: Fields) -> str:
    """The record as read with the mapped fields emptied (their place kept): what writing back starts from."""
    mapped = {spec.hyps, spec.ref, spec.rank, *spec.scores}
    return json_line({k: None if k in mapped else v for k, v in record.items()})


def utterance_of(record: Any, index: int, spec: Fields, path: Path, line: int) -> Utterance:
    """One record per utterance → an Utterance."""
    if not isinstance(record, dict):
        raise NBestFormatError(path, line, "record is not an object", record)
    texts = record.get(spec.hyps)
    if isinstance(texts, str) and texts.lstrip().startswith("["):  # a CSV cell holding a JSON list
        texts = load_json(texts, path, line)
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise NBestFormatError(path, line, f"field {spec.hyps!r} must be a list of hypothesis strings "
                               "(one record per hypothesis: set fields.rank)", texts)
    columns: dict[str, list] = {}
    for name in spec.scores:
        values = record.get(name)
        if isinstance(values, str) and values.lstrip().startswith("["):
            values = load_json(values, path, line)
        if values is None:
            continue
        if not isinstance(values, list) or len(values) != len(texts):
            raise NBestFormatError(path, line, f"score field {name!r} must be a list of {len(texts)} numbers, one "
                                   f"per hypothesis", values)
        columns[name] = [score(v, path, line, name) for v in values]
    hyps = []
    for k, text in enumerate(texts):
        cells = {name: values[k] for name, values in columns.items() if values[k] is not None}
        hyps.append(Hypothesis(text, {n: c[0] for n, c in cells.items()}, {n: c[1] for n, c in cells.items()}))
    ref = text_field(record, spec.ref, path, line, "reference")
    uid = record_id(record, spec, index, path, line)
    return Utterance(uid, tuple(hyps), ref, {SKELETON: skeleton(record, spec)}, origin=f"{path}:{line}")


def grouped_utterances(rows: list[tuple[int, Any]], spec: Fields, path: Path) -> tuple[list[Utterance], int]:
    """One record per hypothesis → Utterances in order of first appearance, and the rank base (0 or 1)."""
    groups: dict[str, list[tuple[int, int, Mapping[str, Any]]]] = {}
    for line, row in rows:
        if not isinstance(row, dict):
            raise NBestFormatError(path, line, "record is not an object", row)
        if row.get(spec.id) in (None, ""):
            raise NBestFormatError(path, line, f"record has no id in field {spec.id!r}; its fields are", row)
        uid = record_id(row, spec, -1, path, line)
        rank = row.get(spec.rank)
        if isinstance(rank, str) and rank.strip().lstrip("-").isdigit():
            rank = int(rank)
        if isinstance(rank, bool) or not isinstance(rank, int):
            raise NBestFormatError(path, line, f"rank field {spec.rank!r} is not an integer", rank)
        groups.setdefault(uid, []).append((rank, line, row))
    base = min((r for group in groups.values() for r, _, _ in group), default=1)
    utterances = []
    for uid, group in groups.items():
        group.sort(key=lambda item: item[0])
        if base not in (0, 1) or [r for r, _, _ in group] != list(range(base, base + len(group))):
            raise NBestFormatError(path, group[0][1], f"ranks of utterance {uid!r} are not {base}, {base + 1}, … "
                                   "each once", [r for r, _, _ in group])
        refs = {text_field(row, spec.ref, path, line, "reference") for _, line, row in group}
        if len(refs) > 1:
            raise NBestFormatError(path, group[-1][1], f"utterance {uid!r} has different references", sorted(map(str, refs)))
        hyps = []
        for _, line, row in group:
            text = text_field(row, spec.hyps, path, line, "hypothesis", required=True)
            cells = {n: c for n in spec.scores if (c := score(row.get(n), path, line, n)) is not None}
            hyps.append(Hypothesis(text, {n: c[0] for n, c in cells.items()}, {n: c[1] for n, c in cells.items()},
                                   meta={SKELETON: skeleton(row, spec)}))
        utterances.append(Utterance(uid, tuple(hyps), refs.pop(), origin=f"{path}:{group[0][1]}"))
    return utterances, base


def read_fields(path: str | Path, fields: Mapping[str, Any] | Fields | None = None, fmt: str = "fields") -> NBest:
    """Read ``path`` through the field mapping ``fields`` (module docstring)."""
    path = Path(path)
    spec = Fields.of(fields)
    return records_nbest(path, spec, *load_records(path, spec.container), fmt)


def records_nbest(path: Path, spec: Fields, container: str, rows: list[tuple[int, Any]], layout: dict[str, Any],
                  fmt: str) -> NBest:
    """The N-best list of the records ``rows`` of ``path``, read through ``spec``."""
    if spec.rank is None:
        utterances, base = [utterance_of(record, k, spec, path, line) for k, (line, record) in enumerate(rows)], 1
    else:
        utterances, base = grouped_utterances(rows, spec, path)
    if container in ("csv", "tsv"):  # an empty cell is no reference
        utterances = [replace(u, ref=None) if u.ref == "" else u for u in utterances]
    seen: dict[str, str] = {}
    for utt in utterances:
        if utt.id in seen:
            raise NBestFormatError(path, int(utt.origin.rpartition(":")[2]), f"duplicate utterance id (first at "
                                   f"{seen[utt.id]})", utt.id)
        seen[utt.id] = utt.origin
    meta = {"fields": spec.dumps(), "container": container, "layout": value_text(layout),
            "rank_base": str(base)}
    return NBest(utterances, fmt=fmt, meta=meta, source=str(path))


def read_hyporadise(path: str | Path) -> NBest:
    """HyPoradise JSON: a list of ``{"input": [hypotheses], "output": reference, "am_score"?: [...], "id"?: ...}``;
    every list of numbers beside ``input`` is a column (:func:`score_lists`)."""
    path = Path(path)
    container, rows, layout = load_records(path, HYPORADISE.container)
    spec = replace(HYPORADISE, scores=score_lists(rows, HYPORADISE))
    return records_nbest(path, spec, container, rows, layout, "hyporadise")


def score_lists(rows: list[tuple[int, Any]], spec: Fields) -> tuple[str, ...]:
    """``spec.scores``, then every field no mapping names that holds, in some record, a list of numbers (or nulls)
    one per hypothesis, in order of first appearance: no per-hypothesis score is left behind."""
    named = {spec.hyps, spec.ref, spec.id, spec.rank}
    found = dict.fromkeys(spec.scores)
    for _, record in rows:
        hyps = record.get(spec.hyps) if isinstance(record, dict) else None
        if isinstance(hyps, list) and hyps:
            found.update(dict.fromkeys(key for key, value in record.items()
                                       if key not in named and _is_score_list(value, len(hyps))))
    return tuple(found)


def _is_score_list(value: Any, length: int) -> bool:
    """A list of ``length`` numbers (JSON numbers or number texts such as "-inf"; nulls for missing ones)."""
    return (isinstance(value, list) and len(value) == length and any(item is not None for item in value)
            and all(item is None or _is_number(item) for item in value))


def _is_number(item: Any) -> bool:
    if isinstance(item, str):
        return is_number_text(item)
    return isinstance(item, (int, float)) and not isinstance(item, bool)


def looks_like_hyporadise(text: str) -> bool:
    """A JSON list whose first record has an ``input`` list of strings (``output``, the reference, is optional:
    output to re-rank has none)."""
    try:
        doc = loads(text)
    except DecodeError:
        return False
    first = doc[0] if isinstance(doc, list) and doc else None
    hyps = first.get("input") if isinstance(first, dict) else None
    return isinstance(hyps, list) and all(isinstance(h, str) for h in hyps)


def detect_hyporadise(sample: Sample) -> bool:
    """A file opening with ``[`` that :func:`looks_like_hyporadise` (read whole: a JSON list is one value)."""
    return sample.first.lstrip().startswith("[") and looks_like_hyporadise(sample.text)


__all__ = ["HYPORADISE", "SKELETON", "Fields", "detect_hyporadise", "looks_like_hyporadise", "read_fields",
           "read_hyporadise"]
