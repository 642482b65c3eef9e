"""Records: HyPoradise JSON, and any JSON / JSONL / CSV / TSV read through a field mapping (``fmt=fields``).

A :class:`Fields` mapping says which field holds the id, the hypotheses, the reference and each score column:

- one record per utterance (``rank`` unset): ``hyps`` is a list of hypothesis strings, best first, and each score
  field a list of numbers beside it; no ``id`` field (or a record without it) means the record index;
- one record per hypothesis (``rank`` set): ``hyps`` is the hypothesis text, ``rank`` orders an utterance's
  hypotheses (0- or 1-based), ``id`` groups them (required), each score field is one number.

HyPoradise (``fmt=hyporadise``) is the first kind in a JSON list: ``input`` (hypotheses), ``output`` (reference),
optional ``am_score`` and ``id``; ``am_score`` and every other field holding a list of numbers as long as ``input``
(``score``, …) is a column under its own name, from the record where it first does so on (a field that some record
before held otherwise is refused there, as it would be as a score field). Fields the mapping does not name
(HyPoradise's ``instruction``, …) are kept and written back in place; so is the file's JSON layout (indentation,
ASCII escapes).

Records are read one at a time (a JSON list item by item): one record per hypothesis needs the records of each
utterance together, and its ranks start where the first utterance's do (0 or 1).
"""
from __future__ import annotations

import csv
import re
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from ..errors import ConfigError, NBestFormatError, check_known
from ..types import Hypothesis, NBest, Utterance
from .codec import CHUNK, json_items, json_line, json_lines, load_json, value_text
from .seen import Seen
from .common import binary_chunks, blocks_of, csv_lines, head_line, is_number_text, parse_score
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


def container_of(path: Path, given: str) -> str:
    """The file kind: as given, else by suffix, else by content (``[`` JSON, ``{`` JSONL, a tab TSV, else CSV; only
    the lines up to the first that is not blank are read)."""
    if given != "auto":
        return given
    if path.suffix.lower() in SUFFIXES:
        return SUFFIXES[path.suffix.lower()]
    first, head = head_line(path)
    return {"[": "json", "{": "jsonl"}.get(head.lstrip()[:1]) or ("tsv" if "\t" in first else "csv")


_INDENTED = re.compile(rb"\n( *)[ \t\r]*[^ \t\r\n]")  # a line after the first that is not blank, and its indent


def json_layout(path: Path) -> dict[str, Any]:
    """How a JSON file was written (``indent``, ``ascii``, final newline), to write it back the same way: found in one
    pass over its bytes (the indent of the first line after the first that is not blank; ASCII throughout, with
    ``\\u`` escapes; whether it ends with a newline)."""
    indent, ascii_only, escapes, last, carried = None, True, False, b"", b""
    for chunk in binary_chunks(path, CHUNK):
        if indent is None:
            data = carried + chunk
            match = _INDENTED.search(data)
            indent = len(match.group(1)) if match else None
            carried = data[data.rfind(b"\n"):] if match is None and b"\n" in data else b""  # a blank line start
        ascii_only = ascii_only and chunk.isascii()
        escapes = escapes or b"\\u" in last[-1:] + chunk
        last = chunk
    return {"indent": indent or None, "ascii": escapes and ascii_only, "newline": last.endswith(b"\n")}


def table_records(path: Path, delimiter: str) -> tuple[list[str], Iterator[tuple[int, dict[str, str]]]]:
    """The header of a CSV/TSV file, and (line, row) of each row after it, read one at a time."""
    reader = csv.reader(csv_lines(path), delimiter=delimiter)
    header = next(reader, None) or []
    if len(set(header)) != len(header) or not all(header):
        raise NBestFormatError(path, 1, "header has an empty or repeated column name", header)

    def rows() -> Iterator[tuple[int, dict[str, str]]]:
        line = reader.line_num + 1
        for row in reader:
            if row:
                if len(row) != len(header):
                    raise NBestFormatError(path, line, f"{len(row)} fields for {len(header)} columns", row)
                yield line, dict(zip(header, row))
            line = reader.line_num + 1
    return header, rows()


def record_stream(path: Path, container: str) -> tuple[str, Iterator[tuple[int, Any]], dict[str, Any]]:
    """The file's container, its records with their lines (read one at a time) and what writing it back needs
    (layout, header)."""
    container = container_of(path, container)
    if container == "json":
        return container, json_items(path, "a JSON list of records"), json_layout(path)
    if container == "jsonl":
        return container, json_lines(path), {}
    head_line(path)  # a file of blank lines is refused as empty, not for its header
    header, rows = table_records(path, "\t" if container == "tsv" else ",")
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


def score_cells(record: Mapping[str, Any], name: str, count: int, path: Path, line: int
                ) -> list[tuple[float, str] | None] | None:
    """Score field ``name`` of a record of ``count`` hypotheses, a cell each; None where the record has none."""
    values = record.get(name)
    if isinstance(values, str) and values.lstrip().startswith("["):  # a CSV cell holding a JSON list
        values = load_json(values, path, line)
    if values is None:
        return None
    if not isinstance(values, list) or len(values) != count:
        raise NBestFormatError(path, line, f"score field {name!r} must be a list of {count} numbers, one "
                               f"per hypothesis", values)
    return [score(v, path, line, name) for v in values]


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
    columns = {name: cells for name in spec.scores
               if (cells := score_cells(record, name, len(texts), path, line)) is not None}
    hyps = []
    for k, text in enumerate(texts):
        found = {name: values[k] for name, values in columns.items() if values[k] is not None}
        hyps.append(Hypothesis(text, {n: c[0] for n, c in found.items()}, {n: c[1] for n, c in found.items()}))
    ref = text_field(record, spec.ref, path, line, "reference")
    uid = record_id(record, spec, index, path, line)
    return Utterance(uid, tuple(hyps), ref, {SKELETON: skeleton(record, spec)}, origin=f"{path}:{line}")


def record_utterances(rows: Iterable[tuple[int, Any]], spec: Fields, path: Path, facts: dict[str, Any],
                      discover: bool) -> Iterator[Utterance]:
    """One record per utterance → Utterances. With ``discover``, a field no mapping names becomes a score field at
    the first record where it holds a list of numbers one per hypothesis (``facts["fields"]``: the mapping after the
    first record); where an earlier record held it otherwise, the error that record would have given is raised."""
    found, refused = dict.fromkeys(spec.scores), {}
    named = {spec.hyps, spec.ref, spec.id, spec.rank}
    current = spec
    for index, (line, record) in enumerate(rows):
        new = [key for key in score_lists_of(record, spec) if key not in found] if discover else []
        for key in new:
            if key in refused:
                raise refused[key]
        if new:
            found.update(dict.fromkeys(new))
            current = replace(spec, scores=tuple(found))
        facts.setdefault("fields", current)
        utt = utterance_of(record, index, current, path, line)
        for key in record if discover else ():
            if key not in named and key not in found and key not in refused:
                try:
                    score_cells(record, key, len(utt.hyps), path, line)
                except NBestFormatError as err:
                    refused[key] = err
        yield utt


def grouped_utterances(rows: Iterable[tuple[int, Any]], spec: Fields, path: Path,
                       facts: dict[str, Any]) -> Iterator[Utterance]:
    """One record per hypothesis → Utterances, each from the records of one id, which come together (one that comes
    back after other ids is refused); ``facts["rank_base"]``: the first utterance's lowest rank (0 or 1)."""
    uid, group, done = "", [], set()
    for line, row in rows:
        if not isinstance(row, dict):
            raise NBestFormatError(path, line, "record is not an object", row)
        if row.get(spec.id) in (None, ""):
            raise NBestFormatError(path, line, f"record has no id in field {spec.id!r}; its fields are", row)
        found = record_id(row, spec, -1, path, line)
        rank = row.get(spec.rank)
        if isinstance(rank, str) and rank.strip().lstrip("-").isdigit():
            rank = int(rank)
        if isinstance(rank, bool) or not isinstance(rank, int):
            raise NBestFormatError(path, line, f"rank field {spec.rank!r} is not an integer", rank)
        if group and found != uid:
            yield grouped(uid, group, spec, path, facts)
            group = []
            done.add(uid)
        if found in done:
            raise NBestFormatError(path, line, "records of this utterance come back after other utterances'; one "
                                   "record per hypothesis needs each utterance's records together", found)
        uid = found
        group.append((rank, line, row))
    if group:
        yield grouped(uid, group, spec, path, facts)


def grouped(uid: str, group: list[tuple[int, int, Mapping[str, Any]]], spec: Fields, path: Path,
            facts: dict[str, Any]) -> Utterance:
    """The utterance of the records ``group`` ((rank, line, record) each) of id ``uid``."""
    group.sort(key=lambda item: item[0])
    base = facts.setdefault("rank_base", group[0][0])
    if base not in (0, 1) or [r for r, _, _ in group] != list(range(base, base + len(group))):
        raise NBestFormatError(path, group[0][1], f"ranks of utterance {uid!r} are not {base}, {base + 1}, … "
                               "each once", [r for r, _, _ in group])
    refs = {text_field(row, spec.ref, path, line, "reference") for _, line, row in group}
    if len(refs) > 1:
        raise NBestFormatError(path, group[-1][1], f"utterance {uid!r} has different references",
                               sorted(map(str, refs)))
    hyps = []
    for _, line, row in group:
        text = text_field(row, spec.hyps, path, line, "hypothesis", required=True)
        cells = {n: c for n in spec.scores if (c := score(row.get(n), path, line, n)) is not None}
        hyps.append(Hypothesis(text, {n: c[0] for n, c in cells.items()}, {n: c[1] for n, c in cells.items()},
                               meta={SKELETON: skeleton(row, spec)}))
    return Utterance(uid, tuple(hyps), refs.pop(), origin=f"{path}:{group[0][1]}")


def distinct(utterances: Iterable[Utterance], path: Path, container: str) -> Iterator[Utterance]:
    """``utterances``, each id once (a second is refused, naming where the first was read); an empty CSV cell is no
    reference."""
    seen = Seen()
    for utt in utterances:
        line = int(utt.origin.rpartition(":")[2])
        if utt.id in seen:
            raise NBestFormatError(path, line, f"duplicate utterance id (first at {path}:{seen[utt.id]})", utt.id)
        seen[utt.id] = line
        yield replace(utt, ref=None) if utt.ref == "" and container in ("csv", "tsv") else utt


def fields_blocks(path: str | Path, size: int = 0, fields: Mapping[str, Any] | Fields | None = None,
                  fmt: str = "fields") -> Iterator[NBest]:
    """The list in ``path``, read through the field mapping ``fields`` (module docstring), as blocks of ``size``
    utterances."""
    return records_blocks(Path(path), Fields.of(fields), size, fmt)


def hyporadise_blocks(path: str | Path, size: int = 0) -> Iterator[NBest]:
    """HyPoradise JSON: a list of ``{"input": [hypotheses], "output": reference, "am_score"?: [...], "id"?: ...}``,
    every list of numbers beside ``input`` a column (module docstring), as blocks of ``size`` utterances."""
    return records_blocks(Path(path), HYPORADISE, size, "hyporadise", discover=True)


def records_blocks(path: Path, spec: Fields, size: int, fmt: str, discover: bool = False) -> Iterator[NBest]:
    """The N-best list of the records of ``path``, read one at a time through ``spec``, as blocks."""
    container, rows, layout = record_stream(path, spec.container)
    facts: dict[str, Any] = {}
    if spec.rank is None:
        utterances = record_utterances(rows, spec, path, facts, discover)
    else:
        utterances = grouped_utterances(rows, spec, path, facts)

    def nbest(chunk: list[Utterance]) -> NBest:
        meta = {"fields": facts.get("fields", spec).dumps(), "container": container, "layout": value_text(layout),
                "rank_base": str(facts.get("rank_base", 1))}
        return NBest(chunk, fmt=fmt, meta=meta, source=str(path))
    yield from blocks_of(distinct(utterances, path, container), size, nbest)


def score_lists_of(record: Any, spec: Fields) -> list[str]:
    """The fields of ``record`` no mapping names that hold a list of numbers (or nulls), one per hypothesis."""
    hyps = record.get(spec.hyps) if isinstance(record, dict) else None
    if not isinstance(hyps, list) or not hyps:
        return []
    named = {spec.hyps, spec.ref, spec.id, spec.rank}
    return [key for key, value in record.items() if key not in named and _is_score_list(value, len(hyps))]


def _is_score_list(value: Any, length: int) -> bool:
    """A list of ``length`` numbers (JSON numbers or number texts such as "-inf"; nulls for missing ones)."""
    return (isinstance(value, list) and len(value) == length and any(item is not None for item in value)
            and all(item is None or _is_number(item) for item in value))


def _is_number(item: Any) -> bool:
    if isinstance(item, str):
        return is_number_text(item)
    return isinstance(item, (int, float)) and not isinstance(item, bool)


_NESTED_LIST = re.compile(r"\s*\[\s*[\[{]")  # a JSON list opening with a list or an object


def detect_hyporadise(sample: Sample) -> bool:
    """A JSON list whose first record has an ``input`` list of strings (``output``, the reference, is optional: output
    to re-rank has none); only that record is read. A list that opens with a list or an object is JSON, whose error
    is said as such (no line format starts so)."""
    if not sample.first.lstrip().startswith("["):
        return False
    items = json_items(sample.path)
    try:
        first = next(items, None)
    except NBestFormatError:
        if _NESTED_LIST.match("".join(sample.lines)):
            raise
        return False
    finally:
        items.close()
    hyps = first[1].get("input") if first is not None and isinstance(first[1], dict) else None
    return isinstance(hyps, list) and all(isinstance(h, str) for h in hyps)


__all__ = ["HYPORADISE", "SKELETON", "Fields", "detect_hyporadise", "fields_blocks", "hyporadise_blocks"]
