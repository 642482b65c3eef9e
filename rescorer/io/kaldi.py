"""Kaldi n-best text archives (``nbest-to-linear`` output): ``words_text`` plus cost files.

Keys are ``<utt>-<k>`` (k = 1-based rank). Costs are −ln p (lower is better) and
become log-probs: ``acwt`` → ``am``, ``lmwt.nolm`` → ``graph``, ``lmwt.withlm`` → ``lm``;
any ``<name>.cost`` file becomes column ``<name>``.
"""
from __future__ import annotations

import math
from pathlib import Path

from ..errors import NBestFormatError
from ..files import atomic_dir
from ..types import Hypothesis, NBest, Utterance
from .common import id_lines, parse_score, present, read_lines, require_ranks, split_key
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


def read(path: str | Path) -> NBest:
    path = Path(path)
    if not is_kaldi_dir(path):
        raise NBestFormatError(path, None, f"expected a directory with a '{WORDS_FILE}' file (run int2sym.pl -f 2- on 'words')")
    words = path / WORDS_FILE
    order: dict[str, list[tuple[int, str, int]]] = {}
    keys: dict[str, int] = {}
    for number, line in enumerate(read_lines(words), 1):
        key, text = split_key(line)
        if key in keys:
            raise NBestFormatError(words, number, "duplicate key", key)
        keys[key] = number
        utt, rank = _split_key(key, words, number)
        order.setdefault(utt, []).append((rank, text.strip(), number))
    columns: dict[str, dict[str, tuple[float, str]]] = {}
    for column, file in _cost_files(path).items():
        values = {}
        for number, line in enumerate(read_lines(file), 1):
            key, raw = split_key(line)
            if key not in keys:
                raise NBestFormatError(file, number, f"key not in {WORDS_FILE}", key)
            if not raw.strip():
                raise NBestFormatError(file, number, "truncated line (no cost)", line)
            if key in values:
                raise NBestFormatError(file, number, "duplicate key", key)
            cost = parse_score(raw, file, number, column)
            if cost == -math.inf:
                raise NBestFormatError(file, number, "cost is -inf", raw)
            values[key] = (-cost, raw.strip())
        missing = next((k for k in keys if k not in values), None)
        if missing is not None:
            raise NBestFormatError(words, keys[missing], f"key has no cost in {file.name}", missing)
        columns[column] = values
    utterances = []
    for utt, entries in order.items():
        require_ranks([r for r, _, _ in entries], words, entries[0][2], utt)
        hyps = []
        for rank, text, _ in sorted(entries):
            key = f"{utt}-{rank}"
            hyps.append(Hypothesis(text, {c: v[key][0] for c, v in columns.items()}, {c: v[key][1] for c, v in columns.items()}))
        utterances.append(Utterance(utt, tuple(hyps), origin=f"{words}:{entries[0][2]}"))
    return NBest(utterances, fmt="kaldi", source=str(path))


def write(nbest: NBest, path: str | Path) -> None:
    """Write ``words_text`` and one cost file per column (named as Kaldi names them where known).

    Every column is kept under its own name, as a cost (−log-prob); raw values only if read from Kaldi.
    """
    target = Target.of(nbest, "kaldi", path)
    columns = set(nbest.columns)
    for utt in nbest:
        for hyp in utt.hyps:
            if set(hyp.scores) != columns:
                missing = sorted(columns - set(hyp.scores))
                raise NBestFormatError(path, None, f"kaldi needs every column for every hypothesis (one cost file "
                                       f"per column); a hypothesis of {utt.id!r} lacks", missing)
    file_of = {col: name for name, col in COST_FILES.items()}
    with atomic_dir(path) as tmp:
        files: dict[str, list[tuple[str, str]]] = {WORDS_FILE: []}
        for utt in nbest:
            for rank, hyp in enumerate(utt.hyps, 1):
                key = f"{utt.id}-{rank}"
                files[WORDS_FILE].append((key, hyp.text))
                for column in hyp.scores:
                    cost = target.value(utt, hyp, column, lambda v: -v)
                    files.setdefault(file_of.get(column, f"{column}.cost"), []).append((key, cost))
        for name, rows in files.items():
            (tmp / name).write_text(id_lines(rows, path), encoding="utf-8")
