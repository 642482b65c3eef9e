"""Writing records back (``rescorer/io/records.py`` reads them): HyPoradise JSON, and JSON / JSONL / CSV / TSV
through a field mapping. Lists read in the same format keep every field the mapping does not name, the key order,
the ids' JSON types and the file's layout; other lists get ``id``, hypotheses, reference and score fields.

Records are written block by block as they come (a JSON list a record at a time, laid out as the whole list would
be; CSV rows are held in a temporary file until the header, which grows with the records' fields, is known). What
a score field holds is decided by the first block that has its column; columns first met in later blocks, where
the mapping follows the list's columns, are fields of their own name from there on."""
from __future__ import annotations

import contextlib
import csv
import math
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import IO, Any, Callable, Iterator, Mapping

from ..errors import NBestFormatError
from ..files import atomic_file
from ..types import Hypothesis, NBest, Utterance
from .codec import document_end, document_items, json_line, loads, value_text
from .common import format_number, json_score
from .records import HYPORADISE, SKELETON, SUFFIXES, Fields
from .target import native_format

DEFAULT_LAYOUT = {"indent": 4, "ascii": False, "newline": True}


class Plan:
    """One writer call: the mapping, the file kind, which column each score field takes, whether to reuse what was
    read; ``grow``: every column no score field takes becomes a field of its own name (the mapping follows the
    list)."""

    def __init__(self, like: NBest, path: Path, fmt: str, spec: Fields, score_column: str | None, grow: bool):
        stored = like.meta.get("fields")
        self.native = native_format(like) == fmt and (stored is None or Fields.of(loads(stored)) == spec)
        self.path, self.fmt, self.spec, self.score_column, self.grow = path, fmt, spec, score_column, grow
        self.layout = loads(like.meta.get("layout") or "{}") if self.native else {}
        self.container = spec.container if spec.container != "auto" else (
            like.meta.get("container") if self.native and like.meta.get("container") else
            SUFFIXES.get(path.suffix.lower(), "jsonl"))
        self.columns: dict[str, str | None] = {}
        self.base = int(like.meta.get("rank_base", "1")) if self.native else 1

    def see(self, columns: list[str]) -> None:
        """Take in the columns of a block before it is written: each score field without a column takes the first
        it wants that is there; with ``grow``, the columns no field takes become fields."""
        self.take(columns)
        if self.grow:
            taken = set(self.columns.values())
            new = tuple(c for c in columns if c not in taken and c not in self.spec.scores)
            self.spec = replace(self.spec, scores=(*self.spec.scores, *new))
            self.take(columns)

    def take(self, columns: list[str]) -> None:
        """Give each score field without a column the first it wants among ``columns``."""
        for k, name in enumerate(self.spec.scores):
            if self.columns.get(name) is None:
                self.columns[name] = next((c for c in self.wanted(k, name) if c in columns), None)

    def wanted(self, k: int, name: str) -> list[str | None]:
        """The columns score field ``name`` (the ``k``-th) takes, in order of preference."""
        if self.fmt != "hyporadise":
            return [self.score_column or name]
        if k == 0:  # am_score: `score_column`, else am_score, else an overall score no other field holds
            overall = [c for c in ("score", "total") if c not in self.spec.scores]
            return [self.score_column] if self.score_column else [name, *overall]
        return [name]  # the file's other score lists: each its own column

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


@contextlib.contextmanager
def records_writer(path: Path, plan: Plan) -> Iterator[Callable[[NBest], None]]:
    """A function that writes the records of each block as it comes (:class:`Plan`), the file in place when the
    context ends, nothing left if it fails."""
    index = 0
    with atomic_file(path) as tmp, tmp.open("w", encoding="utf-8") as out, _container(plan, out) as put:
        def write(block: NBest) -> None:
            nonlocal index
            plan.see(block.columns)
            if plan.spec.rank is None:
                put([utterance_record(plan, utt, index + k) for k, utt in enumerate(block)])
            else:
                put([row for utt in block for row in hypothesis_rows(plan, utt)])
            index += len(block)
        yield write


@contextlib.contextmanager
def _container(plan: Plan, out: IO[str]) -> Iterator[Callable[[list[dict[str, Any]]], None]]:
    """A function that writes records into ``out`` as the container lays them out; what closes the file is written
    when the context ends (a JSON list's bracket, a CSV file's header and rows)."""
    if plan.container == "jsonl":
        yield lambda records: out.writelines(json_line(r) + "\n" for r in records)
    elif plan.container == "json":
        layout, empty = {**DEFAULT_LAYOUT, **plan.layout}, True

        def put(records: list[dict[str, Any]]) -> None:
            nonlocal empty
            out.write(document_items(records, layout["indent"], layout["ascii"], empty))
            empty = empty and not records
        yield put
        out.write(document_end(layout["indent"], empty) + ("\n" if layout["newline"] else ""))
    else:
        header = list(plan.layout.get("header") or [])
        with tempfile.TemporaryFile("w+", encoding="utf-8", dir=plan.path.parent) as held:
            def hold(records: list[dict[str, Any]]) -> None:
                for record in records:
                    header.extend(key for key in record if key not in header)
                held.writelines(json_line([cell(record.get(key)) for key in header]) + "\n" for record in records)
            yield hold
            rows = csv.writer(out, delimiter="\t" if plan.container == "tsv" else ",", lineterminator="\n")
            rows.writerow(header)
            held.seek(0)
            rows.writerows(row + [""] * (len(header) - len(row)) for row in map(loads, held))


def cell(value: Any) -> str:
    """A CSV cell: text as is, an empty cell for nothing, JSON for lists (one record per utterance)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else value_text(value)


def write_fields(nbest: NBest, path: str | Path, fields: Mapping[str, Any] | Fields | None = None,
                 score_column: str | None = None, fmt: str = "fields") -> None:
    """Write ``nbest`` through the mapping ``fields`` (default: the one it was read with, else ``id``, ``hyps``,
    ``ref`` and every column as a score field), in the container ``fields.container`` or the path's suffix."""
    with fields_writer(path, nbest, fields, score_column, fmt) as write:
        write(nbest)


@contextlib.contextmanager
def fields_writer(path: str | Path, like: NBest, fields: Mapping[str, Any] | Fields | None = None,
                  score_column: str | None = None, fmt: str = "fields") -> Iterator[Callable[[NBest], None]]:
    """A writer of the blocks of a list like ``like`` through the mapping ``fields`` (see :func:`write_fields`)."""
    if fields is not None:
        spec, grow = Fields.of(fields), False
    elif native_format(like) == fmt and like.meta.get("fields"):
        spec, grow = Fields.of(loads(like.meta["fields"])), False
    else:
        spec, grow = Fields(hyps="hyps", ref="ref", id="id"), True
    with records_writer(Path(path), Plan(like, Path(path), fmt, spec, score_column, grow)) as write:
        yield write


def write_hyporadise(nbest: NBest, path: str | Path, score_column: str | None = None) -> None:
    """HyPoradise JSON; ``am_score`` from ``score_column``, else the column ``am_score``, else ``score``/``total``;
    every other column (the file's own score lists, ``rescore``, the LM columns) as a list of its own name, which
    the reader reads back as that column."""
    with hyporadise_writer(path, nbest, score_column) as write:
        write(nbest)


@contextlib.contextmanager
def hyporadise_writer(path: str | Path, like: NBest, score_column: str | None = None
                      ) -> Iterator[Callable[[NBest], None]]:
    """A writer of the blocks of a list like ``like`` as HyPoradise JSON (see :func:`write_hyporadise`)."""
    stored = like.meta.get("fields") if native_format(like) == "hyporadise" else None
    spec = Fields.of(loads(stored)) if stored else HYPORADISE
    with records_writer(Path(path), Plan(like, Path(path), "hyporadise", spec, score_column, grow=True)) as write:
        yield write
