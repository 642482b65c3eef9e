"""Writing records back (``rescorer/io/records.py`` reads them): HyPoradise JSON, and JSON / JSONL / CSV / TSV
through a field mapping. Lists read in the same format keep every field the mapping does not name, the key order,
the ids' JSON types and the file's layout; other lists get ``id``, hypotheses, reference and score fields."""
from __future__ import annotations

import csv
import io
import math
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

from ..errors import NBestFormatError
from ..files import write_text
from ..types import Hypothesis, NBest, Utterance
from .codec import document, json_line, loads, value_text
from .common import format_number, json_score
from .records import HYPORADISE, SKELETON, SUFFIXES, Fields
from .target import native_format

DEFAULT_LAYOUT = {"indent": 4, "ascii": False, "newline": True}


class Plan:
    """One writer call: the mapping, the file kind, which column each score field takes, whether to reuse what was read."""

    def __init__(self, nbest: NBest, path: Path, fmt: str, spec: Fields, score_column: str | None,
                 extra: tuple[str, ...] = ()):
        stored = nbest.meta.get("fields")
        self.native = native_format(nbest) == fmt and (stored is None or Fields.of(loads(stored)) == spec)
        spec = replace(spec, scores=(*spec.scores, *extra))  # more score lists beside the mapping read
        self.path, self.fmt, self.spec = path, fmt, spec
        self.layout = loads(nbest.meta.get("layout") or "{}") if self.native else {}
        self.container = spec.container if spec.container != "auto" else (
            nbest.meta.get("container") if self.native and nbest.meta.get("container") else
            SUFFIXES.get(path.suffix.lower(), "jsonl"))
        columns = set(nbest.columns)
        self.columns = {}
        for k, name in enumerate(spec.scores):
            if fmt != "hyporadise":
                wanted = [score_column or name]
            elif k == 0:  # am_score: `score_column`, else am_score, else an overall score no other field holds
                overall = [c for c in ("score", "total") if c not in spec.scores]
                wanted = [score_column] if score_column else [name, *overall]
            else:  # the file's other score lists: each its own column
                wanted = [name]
            self.columns[name] = next((c for c in wanted if c in columns), None)
        self.base = int(nbest.meta.get("rank_base", "1")) if self.native else 1

    def skeleton(self, meta: Mapping[str, str]) -> dict[str, Any]:
        return loads(meta[SKELETON]) if self.native and SKELETON in meta else {}

    def value(self, utt: Utterance, hyp: Hypothesis, column: str) -> Any:
        """A score as the file holds it: a JSON number (the text read, when native), or text in a CSV cell."""
        raw = hyp.raw.get(column) if self.native else None
        if self.container in ("csv", "tsv"):
            return raw if raw is not None else format_number(hyp.scores[column])
        if raw is not None:
            return json_score(raw)
        number = hyp.scores[column]
        return number if math.isfinite(number) else format_number(number)  # "-inf": our reader reads it back

    def column_values(self, utt: Utterance, field: str) -> list[Any] | None:
        """The list a score field holds for ``utt``: every hypothesis has the column, or none has (None)."""
        column = self.columns.get(field)
        have = [column is not None and column in h.scores for h in utt.hyps]
        if not any(have):
            return None
        if not all(have):
            raise NBestFormatError(self.path, None, f"column {column!r} is missing from some hypotheses of {utt.id!r}; "
                                   f"{self.fmt} field {field!r} holds one value per hypothesis or none")
        return [self.value(utt, h, column) for h in utt.hyps]

    def id_value(self, record: Mapping[str, Any], utt: Utterance) -> Any:
        old = record.get(self.spec.id)
        return old if old is not None and str(old) == utt.id else utt.id


def utterance_record(plan: Plan, utt: Utterance, index: int) -> dict[str, Any]:
    """One record per utterance: the record as read (native), its mapped fields set from ``utt``."""
    spec, record = plan.spec, plan.skeleton(utt.meta)
    out = dict(record)
    if spec.id is not None and (spec.id in record or utt.id != str(index)):
        out[spec.id] = plan.id_value(record, utt)
    elif spec.id is None and utt.id != str(index):
        raise NBestFormatError(plan.path, None, "utterance id is not its record index, and no fields.id holds it",
                               utt.id)
    out[spec.hyps] = [h.text for h in utt.hyps]
    if spec.ref is not None and (utt.ref is not None or spec.ref in record or plan.fmt == "hyporadise"):
        out[spec.ref] = utt.ref
    for field in spec.scores:
        values = plan.column_values(utt, field)
        if values is not None or field in record:
            out[field] = values
    return out


def hypothesis_rows(plan: Plan, utt: Utterance) -> list[dict[str, Any]]:
    spec = plan.spec
    if not utt.hyps:
        raise NBestFormatError(plan.path, None, "utterance has no hypotheses, which one record per hypothesis "
                               "cannot hold", utt.id)
    values = {field: plan.column_values(utt, field) for field in spec.scores}
    rows = []
    for k, hyp in enumerate(utt.hyps):
        record = plan.skeleton(hyp.meta)
        row = {**record, spec.id: plan.id_value(record, utt), spec.rank: plan.base + k, spec.hyps: hyp.text}
        if spec.ref is not None:
            row[spec.ref] = utt.ref
        for field, column in values.items():
            if column is not None:
                row[field] = column[k]
            elif field in row:
                row[field] = None
        rows.append(row)
    return rows


def render(plan: Plan, records: list[dict[str, Any]]) -> str:
    if plan.container == "json":
        layout = {**DEFAULT_LAYOUT, **plan.layout}
        text = document(records, layout["indent"], layout["ascii"])
        return text if layout["newline"] else text.removesuffix("\n")
    if plan.container == "jsonl":
        return "".join(json_line(r) + "\n" for r in records)
    header = list(plan.layout.get("header") or [])
    for record in records:
        header += [key for key in record if key not in header]
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter="\t" if plan.container == "tsv" else ",", lineterminator="\n")
    writer.writerow(header)
    for record in records:
        writer.writerow([cell(record.get(key)) for key in header])
    return buffer.getvalue()


def cell(value: Any) -> str:
    """A CSV cell: text as is, an empty cell for nothing, JSON for lists (one record per utterance)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else value_text(value)


def write_fields(nbest: NBest, path: str | Path, fields: Mapping[str, Any] | Fields | None = None,
                 score_column: str | None = None, fmt: str = "fields", extra: tuple[str, ...] = ()) -> None:
    """Write ``nbest`` through the mapping ``fields`` (default: the one it was read with, else ``id``, ``hyps``,
    ``ref`` and every column as a score field), in the container ``fields.container`` or the path's suffix."""
    path = Path(path)
    if fields is not None:
        spec = Fields.of(fields)
    elif native_format(nbest) == fmt and nbest.meta.get("fields"):
        spec = Fields.of(loads(nbest.meta["fields"]))
    else:
        spec = Fields(hyps="hyps", ref="ref", id="id", scores=tuple(nbest.columns))
    plan = Plan(nbest, path, fmt, spec, score_column, extra)
    spec = plan.spec
    if spec.rank is None:
        records = [utterance_record(plan, utt, k) for k, utt in enumerate(nbest)]
    else:
        records = [row for utt in nbest for row in hypothesis_rows(plan, utt)]
    write_text(path, render(plan, records))


def write_hyporadise(nbest: NBest, path: str | Path, score_column: str | None = None) -> None:
    """HyPoradise JSON; ``am_score`` from ``score_column``, else the column ``am_score``, else ``score``/``total``;
    every other column (the file's own score lists, ``rescore``, the LM columns) as a list of its own name, which
    the reader reads back as that column."""
    stored = nbest.meta.get("fields") if native_format(nbest) == "hyporadise" else None
    spec = Fields.of(loads(stored)) if stored else HYPORADISE
    first = score_column or next((c for c in (spec.scores[0], "score", "total") if c in nbest.columns), None)
    extra = tuple(c for c in nbest.columns if c not in spec.scores and c != first)
    write_fields(nbest, path, spec, score_column, fmt="hyporadise", extra=extra)
