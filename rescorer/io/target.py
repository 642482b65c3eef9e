"""How one writer renders an N-best list in its format, and what it refuses before writing anything.

Rules:

- ``raw`` values and format extras (``meta``) are written verbatim only to the format they were read
  from (:func:`native_format`); any other format gets the natural-log value in its own convention
  (base 2 for fairseq, costs for Kaldi and Sockeye, ``tensor(x)`` for ESPnet2).
- A format with one overall score takes the ``score`` column, else ``total`` (Moses/Marian look for
  ``total`` first), or the column named by ``score_column=``; with none of them it refuses.
- Ids, texts and column names the format's lines cannot hold are refused with a one-line error;
  the project's own reader must read back what was written (line formats strip surrounding
  whitespace from texts, and ESPnet1 collapses runs of it, as their toolkits do).

What each target keeps of a list read from another format (ids and texts always):

- ``jsonl``: everything (columns, raw values, tokens, meta, references).
- ``kaldi``: every column under its own name, as costs. Ids without whitespace.
- ``espnet2``: the overall column as ``score``, the others by name in ``scores``; tokens.
- ``espnet1``: the overall column as ``score``, the others by name in ``scores``; tokens, references.
- ``moses``/``marian``: the overall column as ``total``, the others as labelled features. Integer ids.
- ``fairseq``: the overall column as ``score`` (base 2), references (T lines), tokens (H lines).
  Integer ids (no leading zeros); read back in id order.
- ``sockeye``: the overall column as ``score`` (written as a cost).
- ``nemo``: the overall column as ``score``; ids and references only through the manifest.
- ``mlm-scoring``: the overall column as ``score``, references; read back in sorted id order.
- ``hyporadise``: the column ``am_score`` (``score_column=``, else ``am_score``, else the overall column) as
  ``am_score``, references; ids as ``id`` where they are not the record index. A list read from HyPoradise also
  keeps its other score lists (``score``, …), each from the column of its name.
- ``fields``: the mapping's score fields (default: every column), references, ids (``rescorer/io/records.py``);
  one record per hypothesis cannot hold an utterance without hypotheses.

Non-integer ids are not mapped to integers for fairseq/Moses/Marian: those ids are input line numbers,
which references attach by (``refs.py``), and no mapping could keep that true.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

from ..errors import NBestFormatError
from ..types import Hypothesis, NBest, Utterance
from .seen import Seen
from .common import format_number, line_id_problem, read_at

if TYPE_CHECKING:
    from .format import Format

NATIVE_KEY = "native_fmt"  # NBest.meta key: the format a JSONL file's raw values and meta were read from


def native_format(nbest: NBest) -> str:
    """The format whose text the ``raw`` values and ``meta`` of ``nbest`` are (a JSONL header may name one)."""
    return nbest.meta.get(NATIVE_KEY) or nbest.fmt


@dataclass(frozen=True)
class Target:
    """One writer call: the format, the output path, and whether raw values and meta may be reused."""

    fmt: str
    path: Path
    native: bool
    score_column: str | None = None
    overall_name: str = "score"
    """What the format's reader calls its overall score (Moses: ``total``)."""

    @classmethod
    def of(cls, nbest: NBest, fmt: str, path: str | Path, score_column: str | None = None,
           overall_name: str = "score") -> "Target":
        return cls(fmt, Path(path), native_format(nbest) == fmt, score_column, overall_name)

    def overall(self, utt: Utterance, hyp: Hypothesis) -> str:
        """The column written as the overall score: ``score_column``, else ``score``/``total``."""
        other = "score" if self.overall_name == "total" else "total"
        wanted = (self.score_column,) if self.score_column else (self.overall_name, other)
        found = next((name for name in wanted if name in hyp.scores), None)
        if found is None:
            what = f"column {self.score_column!r} (score_column)" if self.score_column else \
                "overall score ('score' or 'total'; pass score_column=NAME to pick one)"
            raise NBestFormatError(self.path, None, f"a hypothesis of {utt.id!r} has no {what} to write as the "
                                   f"{self.fmt} score; its columns are", sorted(hyp.scores))
        return found

    def others(self, utt: Utterance, hyp: Hypothesis) -> list[str]:
        """The columns besides the overall one, written under their own names where the format can."""
        main = self.overall(utt, hyp)
        rest = [c for c in hyp.scores if c != main]
        if self.overall_name in rest:
            raise NBestFormatError(self.path, None, f"column {self.overall_name!r} of {utt.id!r} would clash with the "
                                   f"{self.fmt} {self.overall_name} written from column", main)
        return rest

    def raw(self, hyp: Hypothesis, column: str) -> str | None:
        """The column's text as read, if it was read from this very format."""
        return hyp.raw.get(column) if self.native else None

    def value(self, utt: Utterance, hyp: Hypothesis, column: str, from_log: Callable[[float], float] = float) -> str:
        """The column as the file writes it: the raw text if native, else ``from_log(score)``."""
        raw = self.raw(hyp, column)
        if raw is not None:
            return raw
        value = from_log(hyp.scores[column])
        if value == math.inf:
            raise NBestFormatError(self.path, None, f"column {column!r} of {utt.id!r} is -inf, which {self.fmt} "
                                   "cannot hold as a finite cost", hyp.scores[column])
        return format_number(value)

    def meta(self, meta: Mapping[str, str]) -> Mapping[str, str]:
        """Format extras (``meta``) are only written back to the format they came from."""
        return meta if self.native else {}


# ---------------------------------------------------------------- refusals before writing
def utterance_error(utt: Utterance, output: str | Path, problem: str, value: object) -> NBestFormatError:
    """An error about one utterance that ``output`` cannot hold, named where the utterance was read (its ``origin``,
    file:line) when it was read from a file, else by ``output``."""
    where, line = read_at(utt.origin)
    if where and line is not None:
        return NBestFormatError(where, line, f"{problem} (writing {output})", value)
    return NBestFormatError(output, None, problem, value)


def check_line_ids(nbest: NBest, path: str | Path) -> None:
    """Refuse, naming where it was read, an utterance id an ``id text`` file (``path``) cannot hold."""
    for utt in nbest:
        problem = line_id_problem(utt.id)
        if problem:
            raise utterance_error(utt, path, problem, utt.id)


def check_stem_id(utt_id: str, path: str | Path) -> None:
    """A NeMo manifest keeps the id as the stem of ``<id>.wav``: no empty ids, no directories."""
    if not utt_id or Path(f"{utt_id}.wav").name != f"{utt_id}.wav":
        raise NBestFormatError(path, None, "utterance id cannot be an audio file stem in a NeMo manifest", utt_id)


def check_writable(nbest: NBest, fmt: "Format", path: str | Path, seen: Seen | None = None) -> None:
    """Refuse, before anything is written, what ``fmt`` cannot hold or its reader would read differently (``seen``:
    the ids of the blocks before, where the list is written block by block)."""
    path = Path(path)
    seen = Seen() if seen is None else seen
    for utt in nbest:
        if utt.id in seen:
            raise NBestFormatError(path, None, "duplicate utterance id", utt.id)
        seen.add(utt.id)
        problem = fmt.id_problem(utt.id, fmt.name) if fmt.id_problem else None
        if problem:
            raise utterance_error(utt, path, problem, utt.id)
        if not utt.hyps and not fmt.holds_empty:
            raise NBestFormatError(path, None, f"utterance has no hypotheses, which {fmt.name} cannot hold", utt.id)
        if fmt.text_chars or fmt.text_words:
            for hyp in utt.hyps:
                _check_texts(utt, hyp, fmt, path)
    if fmt.column_problem:
        for column in nbest.columns:
            if fmt.column_problem(column):
                raise NBestFormatError(path, None, f"score column name cannot be written as {fmt.name}", column)


def _check_texts(utt: Utterance, hyp: Hypothesis, fmt: "Format", path: Path) -> None:
    for text in (hyp.text, hyp.tokens or "", utt.ref or "" if fmt.refs_inline else ""):
        if any(c in text for c in fmt.text_chars):
            raise NBestFormatError(path, None, f"a text of {utt.id!r} cannot be written as {fmt.name}", text)
    found = [word for word in fmt.text_words if word in hyp.text]
    if found:
        raise NBestFormatError(path, None, f"a text of {utt.id!r} holds {found[0]!r}, which {fmt.name} cannot hold",
                               hyp.text)
