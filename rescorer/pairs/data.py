"""Minimal pairs (acceptable, unacceptable) and sentence sets, read from files.

Pair formats (``fmt``):

- ``columns``: JSONL, CSV or TSV with one pair a record: ``good`` and ``bad`` columns, optional ``group``
  (the phenomenon accuracy is reported by) and ``paradigm`` columns.
- ``rows``: one sentence a record, each two consecutive records a pair (CLiMP, EventsAdapt): a ``sentence``
  and a ``label`` column (the acceptable sentence's label is ``good_label``), optional ``group``/``paradigm``.
- ``blimp``: ``columns`` with BLiMP's names (``sentence_good``, ``sentence_bad``, group ``linguistics_term``
  — or ``field`` / ``UID`` — and paradigm ``UID``).
- ``climp``: ``rows`` with CLiMP's layout (sentence second to last, label 1/0 last, the paradigm = file name).

A CSV/TSV column may be named by its 0-based position (negative: from the end). A directory reads every file
of the format in name order; ``limit`` keeps the first pairs of each file. Without a paradigm column the
paradigm is the file name, and without a group column the group is the paradigm.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Union

from ..errors import ConfigError, DataFormatError, UnknownNameError
from ..io.codec import load_json
from ..io.common import read_text, split_lines

TableColumn = Union[str, int]  # a column of a pairs file: its name, or (CSV/TSV) its 0-based position
TABLE_SUFFIXES = (".jsonl", ".csv", ".tsv")
FORMATS = ("blimp", "climp", "columns", "rows")
PRESETS: dict[str, dict[str, Any]] = {
    "blimp": dict(layout="columns", good="sentence_good", bad="sentence_bad", group="linguistics_term", paradigm="UID",
                  suffixes=(".jsonl",)),
    "climp": dict(layout="rows", sentence=-2, label=-1, good_label="1", suffixes=(".csv",)),
    "columns": dict(layout="columns", good="good", bad="bad"),
    "rows": dict(layout="rows", sentence="sentence", label="label", good_label="1"),
}


@dataclass(frozen=True)
class Pair:
    good: str
    bad: str
    phenomenon: str  # the group accuracy is reported by
    paradigm: str    # the paradigm (BLiMP UID, else the file name)
    where: str       # file:line


@dataclass(frozen=True)
class Record:
    """One JSONL object or CSV row: its fields by name and, for CSV, by position."""

    path: Path
    line: int
    fields: dict[str, Any]
    values: tuple[Any, ...] | None = None

    def get(self, column: TableColumn, what: str) -> Any:
        if isinstance(column, int):
            if self.values is None:
                raise DataFormatError(self.path, self.line, f"{what} column must be named in JSONL, not a position",
                                      column)
            if not -len(self.values) <= column < len(self.values):
                raise DataFormatError(self.path, self.line, f"no {what} column at position {column} "
                                      f"(the row has {len(self.values)})")
            return self.values[column]
        if column not in self.fields:
            raise DataFormatError(self.path, self.line, f"missing {what} column {column!r} "
                                  f"(columns: {', '.join(map(str, self.fields))})")
        return self.fields[column]

    def sentence(self, column: TableColumn, what: str) -> str:
        value = self.get(column, what)
        if not isinstance(value, str) or not value.strip():
            raise DataFormatError(self.path, self.line, f"{what} sentence is empty or not text", value)
        return value

    def text(self, column: TableColumn | None, what: str, default: str) -> str:
        """The column's value as text, or ``default`` when no column is given."""
        return default if column is None else str(self.get(column, what))


def records(path: Path) -> Iterator[Record]:
    """The records of a JSONL (one object a line; blank lines skipped) or CSV/TSV (header row) file."""
    text = read_text(path)
    if path.suffix == ".jsonl":
        for number, line in enumerate(split_lines(text), start=1):
            if not line.strip():
                continue
            value = load_json(line, path, number)
            if not isinstance(value, dict):
                raise DataFormatError(path, number, "expected a JSON object", line)
            yield Record(path, number, value)
        return
    if path.suffix not in (".csv", ".tsv"):
        raise DataFormatError(path, None, f"unknown table type (expected one of {', '.join(TABLE_SUFFIXES)})")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t" if path.suffix == ".tsv" else ",")
    try:
        header = next(reader)
        for row in reader:
            if not row:
                continue
            if len(row) != len(header):
                raise DataFormatError(path, reader.line_num, f"{len(row)} fields, but the header has {len(header)}",
                                      row)
            yield Record(path, reader.line_num, dict(zip(header, row)), tuple(row))
    except csv.Error as err:
        raise DataFormatError(path, reader.line_num, f"invalid CSV ({err})") from None


def column_pairs(path: Path, good: TableColumn, bad: TableColumn, group: TableColumn | None,
                 paradigm: TableColumn | None) -> Iterator[Pair]:
    for r in records(path):
        sentences = r.sentence(good, "good"), r.sentence(bad, "bad")
        kind = r.text(paradigm, "paradigm", path.stem)
        yield Pair(*sentences, r.text(group, "group", kind), kind, f"{path}:{r.line}")


def row_pairs(path: Path, sentence: TableColumn, label: TableColumn, good_label: str, group: TableColumn | None,
              paradigm: TableColumn | None) -> Iterator[Pair]:
    rows = iter(records(path))
    for first in rows:
        second = next(rows, None)
        if second is None:
            raise DataFormatError(path, first.line, "odd number of rows: the last one has no partner")
        labels = [str(r.get(label, "label")) for r in (first, second)]
        if sorted(lab == str(good_label) for lab in labels) != [False, True]:
            raise DataFormatError(path, second.line, f"rows {first.line} and {second.line} are not one acceptable "
                                  f"({good_label!r}) and one unacceptable sentence: labels", labels)
        good, bad = (first, second) if labels[0] == str(good_label) else (second, first)
        kind = good.text(paradigm, "paradigm", path.stem)
        yield Pair(good.sentence(sentence, "sentence"), bad.sentence(sentence, "sentence"),
                   good.text(group, "group", kind), kind, f"{path}:{first.line}")


def files_of(path: Path, suffixes: tuple[str, ...]) -> list[Path]:
    if path.is_dir():
        found = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in suffixes)
        if not found:
            raise DataFormatError(path, None, f"directory has no {' / '.join(suffixes)} files")
        return found
    if not path.exists():
        raise DataFormatError(path, None, "no such file or directory")
    return [path]


def read_pairs(path: str | Path, fmt: str = "blimp", limit: int | None = None, **columns: Any) -> list[Pair]:
    """Every pair of a file or directory; ``columns`` overrides the format's column names (None: keep)."""
    if fmt not in PRESETS:
        raise UnknownNameError("pair format", fmt, FORMATS)
    if limit is not None and limit < 1:
        raise ConfigError(f"limit must be ≥ 1, not {limit}")
    options = {**PRESETS[fmt], **{k: v for k, v in columns.items() if v is not None}}
    layout, suffixes = options.pop("layout"), options.pop("suffixes", TABLE_SUFFIXES)
    pairs: list[Pair] = []
    for file in files_of(Path(path), suffixes):
        if layout == "columns":
            found = column_pairs(file, options["good"], options["bad"], options.get("group"), options.get("paradigm"))
        else:
            found = row_pairs(file, options["sentence"], options["label"], options["good_label"], options.get("group"),
                              options.get("paradigm"))
        for k, pair in enumerate(found):
            if limit is not None and k == limit:
                break
            pairs.append(pair)
    if not pairs:
        raise DataFormatError(path, None, "no minimal pairs found")
    return pairs


@dataclass
class PairSet:
    """A named minimal-pair set (what ``conf/pairs/*.yaml`` instantiates); ``read()`` returns its pairs."""

    name: str
    path: str
    fmt: str = "blimp"
    limit: int | None = None
    good: TableColumn | None = None
    bad: TableColumn | None = None
    sentence: TableColumn | None = None
    label: TableColumn | None = None
    good_label: str | None = None
    group: TableColumn | None = None
    paradigm: TableColumn | None = None

    def read(self) -> list[Pair]:
        return read_pairs(self.path, self.fmt, self.limit, good=self.good, bad=self.bad, sentence=self.sentence,
                          label=self.label, good_label=self.good_label, group=self.group, paradigm=self.paradigm)


def read_sentences(path: str | Path, column: TableColumn | None = None) -> list[str]:
    """The distinct sentences of a text file (one a line) or of a JSONL/CSV/TSV ``column``, in order."""
    path = Path(path)
    if column is None:
        if path.suffix in TABLE_SUFFIXES:
            raise ConfigError(f"{path}: say which column holds the sentences")
        sentences = [line.strip() for line in split_lines(read_text(path))]
    else:
        sentences = [r.sentence(column, "sentence") for r in records(path)]
    return list(dict.fromkeys(s for s in sentences if s))
