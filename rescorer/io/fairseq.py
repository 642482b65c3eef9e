"""fairseq-generate / fairseq-interactive output: S/T/H/D/P lines (formats-reference §3).

Scores are base-2 from fairseq 0.10 on (the output has D lines) and natural log
before; ``log_base`` overrides the guess. Hypothesis text is the detokenized D
text when present (the H text is kept as ``tokens``). Sentences are read in id
order (fairseq-generate writes them in batch order), the lines of each together.
"""
from __future__ import annotations

import math
import re
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, ContextManager, Iterable, Iterator

import numpy as np

from ..errors import NBestFormatError
from ..types import Hypothesis, NBest, Utterance
from .common import blocks_of, line_writer, lines_between, offset_lines, parse_score, reading
from .format import Sample
from .target import Target

LINE = re.compile(r"^([A-Z])-(\d+)\t")
_SPACED = re.compile(r"^[SHTDP]-\d+ ")
_IGNORED = set("AIEWC")
LARGEST = (1 << 63) - 1  # the largest sentence id read (a dataset index)
MOST_LINES = (1 << 32) - 1  # the most lines a file may have (each sentence's first line number is kept in 4 bytes)


def looks_like(lines: list[str]) -> bool:
    return any(LINE.match(line) and line[0] in "HD" for line in lines)


def detect(sample: Sample) -> bool:
    """fairseq-generate/interactive output: ``H-<id>`` or ``D-<id>`` lines among the first."""
    return not sample.braced and looks_like(sample.lines)


def blocks(path: str | Path, size: int = 0, log_base: str = "auto") -> Iterator[NBest]:
    """The list as blocks of ``size`` utterances, sentences in id order: a first pass notes where each sentence's
    lines start (they come together; a sentence whose lines come back after another's is refused) and whether any D
    line is there (``log_base=auto``: base 2 then, else e); the second reads the sentences in id order."""
    path = Path(path)
    found = _sentences(path)
    base = {"auto": "2" if found.has_d else "e", "2": "2", "e": "e"}.get(str(log_base))
    if base is None:
        raise NBestFormatError(path, None, "log_base must be auto, 2 or e", log_base)
    factor = math.log(2) if base == "2" else 1.0

    def nbest(utterances: list[Utterance]) -> NBest:
        return NBest(utterances, fmt="fairseq", meta={"log_base": base}, source=str(path))
    ids, starts, numbers = found.in_id_order(path)
    with reading(path) as handle:
        utterances = (_utterance(int(sid), _own_lines(int(sid), lines_between(handle, path, int(start), None,
                                                                              int(number))), path, factor, found.has_d)
                      for sid, start, number in zip(ids, starts, numbers))
        yield from blocks_of(utterances, size, nbest)


@dataclass
class _Sentences:
    """Where each sentence of a file starts, in file order: its id, byte and line (4 bytes: files of up to
    :data:`MOST_LINES` lines), 20 bytes a sentence."""

    ids: array = field(default_factory=lambda: array("q"))
    starts: array = field(default_factory=lambda: array("q"))
    numbers: array = field(default_factory=lambda: array("I"))
    has_d: bool = False

    def in_id_order(self, path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ids, starts and line numbers sorted by id (this index is given up for them); an id whose lines come
        in two separate runs is refused, naming the line where it comes again."""
        given = np.frombuffer(self.ids, dtype=np.int64)
        order = np.argsort(given, kind="stable")
        ids = given[order]
        again = np.flatnonzero(ids[1:] == ids[:-1])
        if again.size:
            k = int(order[1:][again].min())
            raise NBestFormatError(path, self.numbers[k], "sentence id appears in two separate blocks", self.ids[k])
        del given
        self.ids = array("q")
        starts = np.frombuffer(self.starts, dtype=np.int64)[order]
        self.starts = array("q")
        numbers = np.frombuffer(self.numbers, dtype=np.uint32)[order]
        self.numbers = array("I")
        return ids, starts, numbers


def _own_lines(sid: int, lines: Iterator[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """The lines of sentence ``sid`` (and what comes between them): up to the next sentence's first line."""
    for number, line in lines:
        match = LINE.match(line)
        if match and match.group(1) in "STHDP" and int(match.group(2)) != sid:
            return
        yield number, line


def _sentences(path: Path) -> _Sentences:
    """Where each sentence starts, the lines of a sentence together; the checks of single lines on the way."""
    found, current, has_h = _Sentences(), None, False
    for number, offset, line in offset_lines(path):
        match = LINE.match(line)
        if not match:
            if _SPACED.match(line):
                raise NBestFormatError(path, number, "fields must be separated by tabs", line)
            continue
        kind, sid = match.group(1), int(match.group(2))
        if sid > LARGEST:
            raise NBestFormatError(path, number, f"sentence id is larger than {LARGEST}", sid)
        if kind in _IGNORED:
            continue
        if kind not in "STHDP":
            raise NBestFormatError(path, number, "unknown line type", line)
        if sid != current:
            if number > MOST_LINES:
                raise NBestFormatError(path, number, f"a fairseq file of more than {MOST_LINES:,} lines is not read")
            found.ids.append(sid)
            found.starts.append(offset)
            found.numbers.append(number)
            current, has_h = sid, False
        has_h = has_h or kind == "H"
        found.has_d = found.has_d or kind == "D"
        if kind in "DP" and not has_h:
            raise NBestFormatError(path, number, f"{kind} line before any H line of sentence {sid}", line)
    if not found.ids:
        raise NBestFormatError(path, None, "no fairseq H- lines found")
    return found


def _utterance(sid: int, lines: Iterable[tuple[int, str]], path: Path, factor: float, has_d: bool) -> Utterance:
    """Sentence ``sid`` from its ``lines``."""
    hyps: list[dict] = []
    ref, meta, first = None, {}, None
    for number, line in lines:
        match = LINE.match(line)
        if not match or match.group(1) in _IGNORED:
            continue
        kind, body = match.group(1), line[match.end():]
        first = first or number
        if kind == "S":
            meta["S"] = body
        elif kind == "T":
            ref = body
        elif kind == "H":
            raw, _, text = body.partition("\t")
            hyps.append({"raw": raw, "score": parse_score(raw, path, number) * factor, "H": text, "line": number})
        elif kind == "D":
            hyps[-1]["D"] = body.partition("\t")[2]
        else:
            hyps[-1]["P"] = body
    if not hyps:
        raise NBestFormatError(path, first, "sentence has no H line", sid)
    out = []
    for h in hyps:
        if has_d and "D" not in h:
            raise NBestFormatError(path, h["line"], "H line without its D line", h["H"])
        tokens = h["H"] if "D" in h else None
        out.append(Hypothesis(h.get("D", h["H"]), {"score": h["score"]}, {"score": h["raw"]}, tokens,
                              {"P": h["P"]} if "P" in h else {}))
    return Utterance(str(sid), tuple(out), ref, meta, origin=f"{path}:{first}")


def write(nbest: NBest, path: str | Path, score_column: str | None = None) -> None:
    """Write S/T/H/D/P lines: the overall column (:class:`Target`) as the score, in the file's log base (2 unless
    read from a natural-log fairseq file); other columns are dropped. Ids must be non-negative integers."""
    with writer(path, nbest, score_column) as put:
        put(nbest)


def writer(path: str | Path, like: NBest, score_column: str | None = None
           ) -> ContextManager[Callable[[NBest], None]]:
    """A writer of the blocks of a list like ``like`` (see :func:`write`)."""
    target = Target.of(like, "fairseq", path, score_column)
    base = target.meta(like.meta).get("log_base", "2")
    factor = math.log(2) if base == "2" else 1.0

    def lines(block: NBest) -> Iterator[str]:
        for utt in block:
            sid, meta = utt.id, target.meta(utt.meta)
            if "S" in meta:
                yield f"S-{sid}\t{meta['S']}"
            if utt.ref is not None:
                yield f"T-{sid}\t{utt.ref}"
            for hyp in utt.hyps:
                score = target.value(utt, hyp, target.overall(utt, hyp), lambda v: v / factor)
                tokens = hyp.tokens if hyp.tokens is not None and base == "2" else hyp.text
                yield f"H-{sid}\t{score}\t{tokens}"
                if base == "2":
                    yield f"D-{sid}\t{score}\t{hyp.text}"
                if "P" in target.meta(hyp.meta):
                    yield f"P-{sid}\t{hyp.meta['P']}"
    return line_writer(path, lines)
