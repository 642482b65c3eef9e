"""Kaldi n-best text archives (``nbest-to-linear`` output): ``words_text`` plus cost files.

Keys are ``<utt>-<k>`` (k = 1-based rank). Costs are −ln p (lower is better) and
become log-probs: ``acwt`` → ``am``, ``lmwt.nolm`` → ``graph``, ``lmwt.withlm`` → ``lm``;
any ``<name>.cost`` file becomes column ``<name>``.
"""
from __future__ import annotations

import contextlib
import math
from pathlib import Path
from typing import Callable, Iterator

from ..errors import NBestFormatError
from ..files import atomic_dir
from ..types import Hypothesis, NBest, Utterance
from .common import KeyedLines, id_lines, parse_score, present, require_ranks, blocks_of
from .format import Sample
from .target import Target

COST_FILES = {"acwt": "am", "lmwt.nolm": "graph", "lmwt.withlm": "lm"}
WORDS_FILE = "words_text"


def is_kaldi_dir(path: Path) -> bool:
    return path.is_dir() and (path / WORDS_FILE).is_file()


def detect(sample: Sample) -> bool:
    """A Kaldi N-best directory: ``words_text`` in it."""
    return is_kaldi_dir(sample.path)


def _cost_files(path: Path) -> dict[str, Path]:
    files = {col: path / name for name, col in COST_FILES.items() if present(path / name)}
    files.update({p.name[: -len(".cost")]: p for p in sorted(path.glob("*.cost"))})
    return files


def _split_key(key: str, path: Path, number: int) -> tuple[str, int]:
    utt, dash, rank = key.rpartition("-")
    if not dash or not rank.isdigit() or not utt or rank != str(int(rank)):
        raise NBestFormatError(path, number, "key is not '<utt>-<rank>' (rank a positive integer)", key)
    return utt, int(rank)


def kaldi_blocks(path: str | Path, size: int = 0) -> Iterator[NBest]:
    """A Kaldi N-best directory as blocks of ``size`` utterances (0: as read), ``words_text`` read a line at a time
    and each cost file in step with it. An utterance's keys are on consecutive lines (``nbest-to-linear`` writes
    them so); a cost file in another order than ``words_text`` is read whole from the line where the orders part,
    and looked up by key."""
    path = Path(path)
    if not is_kaldi_dir(path):
        raise NBestFormatError(path, None, f"expected a directory with a '{WORDS_FILE}' file (run int2sym.pl -f 2- on "
                               "'words')")
    yield from blocks_of(_utterances(path), size, lambda found: NBest(found, fmt="kaldi", source=str(path)))


def _utterances(path: Path) -> Iterator[Utterance]:
    """The utterances of ``words_text`` in its order, each hypothesis with a value from every cost file."""
    with contextlib.ExitStack() as stack:
        words = stack.enter_context(KeyedLines(path / WORDS_FILE))
        costs = [stack.enter_context(_Costs(file, column)) for column, file in _cost_files(path).items()]
        ranks: dict[str, int] = {}  # the utterances read so far → their number of hypotheses
        group: list[tuple[int, Hypothesis, int]] = []  # the utterance being read: (rank, hypothesis, line)
        last = ""
        while words.key is not None:
            key, number = words.key, words.number
            utt, rank = _split_key(key, words.path, number)
            if group and utt != last:
                yield _utterance(last, group, words.path, ranks)
                group = []
            if not group and utt in ranks:
                raise NBestFormatError(words.path, number, "key of an utterance read before another's (an "
                                       "utterance's keys must be on consecutive lines)", key)
            if any(r == rank for r, _, _ in group):
                raise NBestFormatError(words.path, number, "duplicate key", key)
            values = [cost.take(key, number, words.path) for cost in costs]
            group.append((rank, Hypothesis(words.value.strip(), {c.column: v for c, (v, _) in zip(costs, values)},
                                           {c.column: raw for c, (_, raw) in zip(costs, values)}), number))
            last = utt
            words.advance()
        if group:
            yield _utterance(last, group, words.path, ranks)
        for cost in costs:
            cost.finish(ranks)


def _utterance(utt: str, group: list[tuple[int, Hypothesis, int]], words: Path, ranks: dict[str, int]) -> Utterance:
    """The utterance of ``group``, its lines of ``words_text``; its number of hypotheses kept in ``ranks``."""
    require_ranks([r for r, _, _ in group], words, group[0][2], utt)
    ranks[utt] = len(group)
    return Utterance(utt, tuple(h for _, h, _ in sorted(group, key=lambda entry: entry[0])),
                     origin=f"{words}:{group[0][2]}")


class _Costs:
    """One cost file, read in step with ``words_text``; from the first line where its order differs, the rest of it
    is read whole and looked up by key."""

    def __init__(self, path: Path, column: str) -> None:
        self.column = column
        self.lines = KeyedLines(path)
        self.rest: dict[str, tuple[str, str, int]] | None = None  # key → (value, line, number) once out of step

    def __enter__(self) -> "_Costs":
        return self

    def __exit__(self, *exc: object) -> None:
        self.lines.close()

    def take(self, key: str, number: int, words: Path) -> tuple[float, str]:
        """The cost of ``key`` (line ``number`` of ``words``), as a log-prob, and as written."""
        lines = self.lines
        if self.rest is None and lines.key == key:
            value, line, at = lines.value, lines.line, lines.number
            lines.advance()
        else:
            if self.rest is None:
                self.rest = self._read_rest()
            if key not in self.rest:
                raise NBestFormatError(words, number, f"key has no cost in {lines.path.name}", key)
            value, line, at = self.rest.pop(key)
        if not value.strip():
            raise NBestFormatError(lines.path, at, "truncated line (no cost)", line)
        cost = parse_score(value, lines.path, at, self.column)
        if cost == -math.inf:
            raise NBestFormatError(lines.path, at, "cost is -inf", value)
        return -cost, value.strip()

    def _read_rest(self) -> dict[str, tuple[str, str, int]]:
        lines, rest = self.lines, {}
        while lines.key is not None:
            if lines.key in rest:
                raise NBestFormatError(lines.path, lines.number, "duplicate key", lines.key)
            rest[lines.key] = (lines.value, lines.line, lines.number)
            lines.advance()
        return rest

    def finish(self, ranks: dict[str, int]) -> None:
        """Past the last line of ``words_text``: a line left is a key it does not have, or one given twice."""
        lines = self.lines
        left = [(lines.number, lines.key)] if lines.key is not None else \
            sorted((number, key) for key, (_, _, number) in (self.rest or {}).items())
        if left:
            number, key = left[0]
            utt, _, rank = key.rpartition("-")
            known = rank.isdigit() and rank == str(int(rank)) and 1 <= int(rank) <= ranks.get(utt, 0)
            raise NBestFormatError(lines.path, number, "duplicate key" if known else f"key not in {WORDS_FILE}", key)


def write(nbest: NBest, path: str | Path) -> None:
    """Write ``words_text`` and one cost file per column (named as Kaldi names them where known).

    Every column is kept under its own name, as a cost (−log-prob); raw values only if read from Kaldi.
    """
    with writer(path, nbest) as write_block:
        write_block(nbest)


@contextlib.contextmanager
def writer(path: str | Path, like: NBest) -> Iterator[Callable[[NBest], None]]:
    """A writer of Kaldi N-best blocks (:func:`write`; raw values kept where ``like`` was read from Kaldi): each
    block's lines added to ``words_text`` and the cost files as it comes, the directory in place when the context
    ends. The columns of the first block with hypotheses name the cost files; every hypothesis has each of them."""
    target = Target.of(like, "kaldi", path)
    file_of = {col: name for name, col in COST_FILES.items()}
    with atomic_dir(path) as tmp:
        (tmp / WORDS_FILE).write_bytes(b"")
        columns: list[str] = []
        lines = 0

        def write_block(block: NBest) -> None:
            nonlocal lines
            if not lines:
                columns[:] = block.columns
            _check_columns(block, columns, path)
            rows = [(f"{utt.id}-{rank}", utt, hyp) for utt in block for rank, hyp in enumerate(utt.hyps, 1)]
            files = {WORDS_FILE: [(key, hyp.text) for key, _, hyp in rows]}
            for column in columns:
                costs = [(key, target.value(utt, hyp, column, lambda v: -v)) for key, utt, hyp in rows]
                files[file_of.get(column, f"{column}.cost")] = costs
            for name, found in files.items():
                with (tmp / name).open("a", encoding="utf-8") as out:
                    out.write(id_lines(found, path, lines + 1))
            lines += len(rows)
        yield write_block


def _check_columns(block: NBest, columns: list[str], path: str | Path) -> None:
    """Every hypothesis has each of ``columns`` and no other (one cost file per column)."""
    wanted = set(columns)
    for utt in block:
        for hyp in utt.hyps:
            if hyp.scores.keys() != wanted:
                missing = sorted(wanted - set(hyp.scores))
                if missing:
                    raise NBestFormatError(path, None, f"kaldi needs every column for every hypothesis (one cost "
                                           f"file per column); a hypothesis of {utt.id!r} lacks", missing)
                raise NBestFormatError(path, None, "kaldi needs every column for every hypothesis (one cost file "
                                       f"per column); the hypotheses before one of {utt.id!r} lack",
                                       sorted(set(hyp.scores) - wanted))
