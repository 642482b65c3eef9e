"""References: sclite ``.trn`` (``text (id)``), Kaldi ``text`` (``id text``), NeMo manifests and plain line files."""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from ..errors import NBestFormatError
from ..types import NBest, Utterance
from .codec import load_json
from .common import read_at, read_lines, split_key
from .formats import facts
from .target import native_format

_TRN = re.compile(r"^(.*?)\s*\(([^()\s]*)\)\s*$")
REF_FORMATS = ("auto", "trn", "kaldi", "manifest", "lines")


def reference_keys(rid: str) -> list[str]:
    """The utterance ids a reference id answers to: itself, then each of its ``-``-suffixes, longest first
    (sclite's ``spk-utt`` and ``spk-chapter-utt`` ids answer to ``utt``)."""
    parts = rid.split("-")
    return [key for cut in range(len(parts)) if (key := "-".join(parts[cut:]))]


def read_refs(path: str | Path, fmt: str = "auto", ids: set[str] | None = None) -> tuple[str, list[tuple[str | None, str, int]]]:
    """→ (format, [(id or None, text, line)]). ``ids`` decides between Kaldi ``text`` and plain lines
    (:func:`has_ids`)."""
    path = Path(path)
    if fmt not in REF_FORMATS:
        raise NBestFormatError(path, None, f"unknown reference format (choose from {', '.join(REF_FORMATS)})", fmt)
    lines = read_lines(path)
    if fmt == "auto":
        fmt = _detect(path, lines, ids or set())
    rows: list[tuple[str | None, str, int]] = []
    for number, line in enumerate(lines, 1):
        if fmt == "trn":
            match = _TRN.match(line)
            if not match:
                raise NBestFormatError(path, number, "not a .trn line 'text (id)'", line)
            rows.append((match.group(2), " ".join(match.group(1).split()), number))
        elif fmt == "kaldi":
            key, text = split_key(line)
            if not key:
                raise NBestFormatError(path, number, "blank line in a Kaldi text file")
            rows.append((key, " ".join(text.split()), number))
        elif fmt == "manifest":
            if not line.strip():
                continue
            obj = load_json(line, path, number)
            if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
                raise NBestFormatError(path, number, "manifest line has no 'text' string", line)
            uid = Path(str(obj["audio_filepath"])).stem if obj.get("audio_filepath") else None
            rows.append((uid, obj["text"], number))
        else:
            rows.append((None, line.strip(), number))
    return fmt, rows


def _detect(path: Path, lines: list[str], ids: set[str]) -> str:
    sample = [line for line in lines[:50] if line.strip()]
    if path.suffix == ".trn" or sample and all(_TRN.match(line) for line in sample):
        return "trn"
    if path.suffix in (".json", ".jsonl") or sample and sample[0].lstrip().startswith("{"):
        return "manifest"
    return "kaldi" if has_ids(lines, ids) else "lines"


def has_ids(lines: list[str], ids: set[str]) -> bool:
    """Whether the lines are ``id text``: their first words answer to utterance ids (:func:`reference_keys`) on at
    least half of the lines, or on any line through an id that is not a plain number (a sentence may start with
    "3", never with "utt3"). Then every id must match, and none is read as part of a reference."""
    keys = [split_key(line)[0] for line in lines if line.strip()]
    matched = [next((k for k in reference_keys(key) if k in ids), None) for key in keys]
    found = [uid for uid in matched if uid is not None]
    return bool(keys) and (2 * len(found) >= len(keys) or any(not uid.isdigit() for uid in found))


def attach_refs(nbest: NBest, path: str | Path, fmt: str = "auto") -> NBest:
    """Give every utterance its reference; unmatched hypotheses or references are errors (see :class:`References`).
    """
    refs = References.read(path, fmt, nbest)
    attached = refs.attach(nbest)
    refs.finish(nbest.source)
    return attached


class References:
    """A reference file read once and given to a list's utterances block by block; what is left over at the end
    is an error (:meth:`finish`).

    References with ids (``.trn``, Kaldi ``text``: any file whose lines start with utterance ids, :func:`has_ids`)
    attach by id, a reference id also answering to its ``-``-suffixes (:func:`reference_keys`). Plain reference
    lines attach by position, except to Moses, Marian and fairseq lists, whose ids are
    0-based input line numbers: line *i* (0-based) is the reference of sentence id *i*, whatever the order
    of the sentences in the n-best file.
    """

    def __init__(self, path: Path, rows: list[tuple[str | None, str, int]], line_ids: bool):
        self.path, self.line_ids, self.given = path, line_ids, 0
        self.lines = [text for _, text, _ in rows] if any(rid is None for rid, _, _ in rows) else None
        self.by_id: dict[str, tuple[str, int]] = {}
        for rid, text, line in rows if self.lines is None else ():
            if rid in self.by_id:
                raise NBestFormatError(path, line, "duplicate reference id", rid)
            self.by_id[rid] = (text, line)  # type: ignore[index]
        self.suffixes: dict[str, str | None] = {}
        for rid in self.by_id:
            for suffix in reference_keys(rid)[1:]:
                self.suffixes[suffix] = None if suffix in self.suffixes and self.suffixes[suffix] != rid else rid
        self.used: set[str] = set()

    @classmethod
    def read(cls, path: str | Path, fmt: str, first: NBest) -> "References":
        """The references of ``path`` for a list whose first block is ``first`` (its ids decide between Kaldi
        ``text`` and plain lines; its format whether plain lines go by sentence id)."""
        path = Path(path)
        _, rows = read_refs(path, fmt, {u.id for u in first})
        return cls(path, rows, facts(native_format(first)).line_number_ids)

    def attach(self, block: NBest) -> NBest:
        """``block`` (the next utterances of the list) with the references of its utterances."""
        refs = [self._ref(block, utt, self.given + k) for k, utt in enumerate(block)]
        self.given += len(block)
        return replace(block.with_utterances([replace(u, ref=ref) for u, ref in zip(block, refs)]),
                       references=str(self.path))

    def _ref(self, block: NBest, utt: Utterance, position: int) -> str:
        """The reference of ``utt``, the list's utterance number ``position`` (0-based)."""
        if self.lines is not None and self.line_ids:
            return _line_of(block, utt, self.path, self.lines)
        if self.lines is not None:
            if position >= len(self.lines):
                raise NBestFormatError(self.path, None, f"{len(self.lines)} references for more utterances in "
                                       f"{block.source}")
            return self.lines[position]
        rid = utt.id if utt.id in self.by_id else self.suffixes.get(utt.id)
        if rid is None or rid in self.used:
            raise NBestFormatError(*_where(block, utt), f"utterance has no reference in {self.path}", utt.id)
        self.used.add(rid)
        return self.by_id[rid][0]

    def finish(self, source: str) -> None:
        """Refuse references left over: more plain lines than utterances, or an id no utterance took."""
        if self.lines is not None and self.given != len(self.lines):
            raise NBestFormatError(self.path, None,
                                   f"{len(self.lines)} references for {self.given} utterances in {source}")
        unused = [rid for rid in self.by_id if rid not in self.used]
        if unused:
            raise NBestFormatError(self.path, self.by_id[unused[0]][1], f"reference has no hypotheses in {source}",
                                   unused[0])


def _where(nbest: NBest, utt: Utterance) -> tuple[str, int | None]:
    """The n-best file and line an utterance was read from (its ``origin``)."""
    where, line = read_at(utt.origin)
    return where or nbest.source, line


def _line_of(nbest: NBest, utt: Utterance, path: Path, lines: list[str]) -> str:
    """Reference line ``int(id)`` (0-based) of a sentence whose id is its input line number."""
    if not utt.id.isdigit() or int(utt.id) >= len(lines):
        raise NBestFormatError(*_where(nbest, utt), f"sentence id has no reference line in {path} "
                               f"({len(lines)} lines; line i is sentence id i, 0-based)", utt.id)
    return lines[int(utt.id)]
