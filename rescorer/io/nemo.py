"""NeMo beam-search output for the neural rescorer: ``text<TAB>score`` lines, ``beam_size`` per manifest line.

There are no ids in the TSV: grouping comes from the input manifest (JSONL with
``text`` and ``audio_filepath``), whose ``text`` is also the reference.
"""
from __future__ import annotations

import contextlib
import itertools
from pathlib import Path
from typing import Callable, Iterator

from ..errors import NBestFormatError
from ..types import Hypothesis, NBest, Utterance
from .codec import json_line, load_json
from .common import blocks_of, iter_lines, line_writer, parse_score
from .format import Sample
from .target import Target, check_stem_id


def looks_like(lines: list[str]) -> bool:
    first = next((line for line in lines if line.strip()), "")
    text, tab, score = first.rpartition("\t")
    if not tab:
        return False
    try:
        float(score)
    except ValueError:
        return False
    return True


def detect(sample: Sample) -> bool:
    """NeMo's ``text<TAB>score`` lines."""
    return not sample.braced and looks_like(sample.lines)


def manifest_rows(path: str | Path, indexed: bool = False) -> Iterator[tuple[str, str | None, int]]:
    """Manifest lines → (utterance id, reference text, line), one at a time; the id is the audio file's stem (the
    row's index where it has none, or where ``indexed``)."""
    path = Path(path)
    index = 0
    for number, line in iter_lines(path):
        if not line.strip():
            continue
        obj = load_json(line, path, number)
        if not isinstance(obj, dict):
            raise NBestFormatError(path, number, "manifest line is not a JSON object", line)
        audio = obj.get("audio_filepath")
        ref = obj.get("text")
        if ref is not None and not isinstance(ref, str):
            raise NBestFormatError(path, number, "'text' is not a string", ref)
        yield str(index) if indexed or not audio else Path(str(audio)).stem, ref, number
        index += 1


def manifest_ids(path: str | Path) -> tuple[int, bool]:
    """How many rows a manifest has, and whether their ids must be their indices (two rows share an id)."""
    ids: set[str] = set()
    count = 0
    for uid, _, _ in manifest_rows(path):
        ids.add(uid)
        count += 1
    return count, len(ids) != count


def blocks(path: str | Path, size: int = 0, manifest: str | Path | None = None,
           beam_size: int | None = None) -> Iterator[NBest]:
    """The list as blocks of ``size`` utterances, a line at a time (and the manifest's alongside): every
    ``beam_size`` lines an utterance, the beam size found from the counts of lines (read once before)."""
    path = Path(path)
    if manifest is not None:
        count, indexed = manifest_ids(manifest)
        lines = sum(1 for _ in iter_lines(path))
        if lines % count:
            raise NBestFormatError(path, None, f"{lines} beams do not divide evenly over the {count} manifest lines "
                                   f"of {manifest}")
        beam_size, rows = lines // count, manifest_rows(manifest, indexed)
    elif beam_size is None:
        raise NBestFormatError(path, None, "NeMo beams need the manifest (refs=...) or beam_size to be grouped")
    elif beam_size < 1:
        raise NBestFormatError(path, None, f"{sum(1 for _ in iter_lines(path))} lines are not a multiple of beam_size",
                               beam_size)
    else:
        rows = ((str(index), None, None) for index in itertools.count())

    def nbest(utterances: list[Utterance]) -> NBest:
        return NBest(utterances, fmt="nemo", meta={"beam_size": str(beam_size)}, source=str(path))
    yield from blocks_of(_utterances(path, beam_size, rows), size, nbest)


def _utterances(path: Path, beam_size: int, rows: Iterator[tuple[str, str | None, int | None]]
                ) -> Iterator[Utterance]:
    """Every ``beam_size`` lines an utterance, its id and reference the next of ``rows``."""
    beams: list[Hypothesis] = []
    number = 0
    for number, line in iter_lines(path):
        text, tab, raw = line.rpartition("\t")
        if not tab:
            raise NBestFormatError(path, number, "truncated line: expected 'text<TAB>score'", line)
        beams.append(Hypothesis(text, {"score": parse_score(raw, path, number)}, {"score": raw}))
        if len(beams) == beam_size:
            uid, ref, _ = next(rows)
            yield Utterance(uid, tuple(beams), ref, origin=f"{path}:{number - beam_size + 1}")
            beams = []
    if beams:
        raise NBestFormatError(path, None, f"{number} lines are not a multiple of beam_size", beam_size)


def write(nbest: NBest, path: str | Path, manifest: str | Path | None = None, score_column: str | None = None) -> None:
    """Write the TSV (and, if asked, a manifest with the ids as ``<id>.wav`` and the references); the overall
    column (:class:`Target`) is the score. Every utterance needs the same beam size; without a manifest the
    ids are not written (the TSV has none)."""
    with writer(path, nbest, manifest, score_column) as put:
        put(nbest)


@contextlib.contextmanager
def writer(path: str | Path, like: NBest, manifest: str | Path | None = None, score_column: str | None = None
           ) -> Iterator[Callable[[NBest], None]]:
    """A writer of the blocks of a list like ``like`` (see :func:`write`): both files in place when the context
    ends."""
    target = Target.of(like, "nemo", path, score_column)
    sizes: set[int] = set()
    beams = line_writer(path, lambda block: [f"{h.text}\t{target.value(u, h, target.overall(u, h))}"
                                              for u in block for h in u.hyps])
    with contextlib.ExitStack() as stack:
        tsv = stack.enter_context(beams)
        rows = stack.enter_context(line_writer(manifest, lambda block: [
            json_line({"audio_filepath": f"{u.id}.wav", "text": u.ref or ""}) for u in block])) if manifest else None

        def write(block: NBest) -> None:
            sizes.update(len(u.hyps) for u in block)
            if len(sizes) > 1:
                raise NBestFormatError(path, None, "NeMo TSV needs the same number of beams for every utterance",
                                       sorted(sizes))
            for utt in block if manifest is not None else ():
                check_stem_id(utt.id, manifest)
            tsv(block)
            if rows is not None:
                rows(block)
        yield write
