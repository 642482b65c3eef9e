"""NeMo beam-search output for the neural rescorer: ``text<TAB>score`` lines, ``beam_size`` per manifest line.

There are no ids in the TSV: grouping comes from the input manifest (JSONL with
``text`` and ``audio_filepath``), whose ``text`` is also the reference.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import NBestFormatError
from ..files import write_text
from ..types import Hypothesis, NBest, Utterance
from .codec import json_line, load_json
from .common import parse_score, read_lines, text_lines
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


def read_manifest(path: str | Path) -> list[tuple[str, str | None, int]]:
    """Manifest lines → (utterance id, reference text, line); the id is the audio file's stem."""
    path = Path(path)
    rows = []
    for number, line in enumerate(read_lines(path), 1):
        if not line.strip():
            continue
        obj = load_json(line, path, number)
        if not isinstance(obj, dict):
            raise NBestFormatError(path, number, "manifest line is not a JSON object", line)
        audio = obj.get("audio_filepath")
        uid = Path(str(audio)).stem if audio else str(len(rows))
        ref = obj.get("text")
        if ref is not None and not isinstance(ref, str):
            raise NBestFormatError(path, number, "'text' is not a string", ref)
        rows.append((uid, ref, number))
    if len({uid for uid, _, _ in rows}) != len(rows):
        rows = [(str(i), ref, n) for i, (_, ref, n) in enumerate(rows)]
    return rows


def read(path: str | Path, manifest: str | Path | None = None, beam_size: int | None = None) -> NBest:
    path = Path(path)
    rows = []
    for number, line in enumerate(read_lines(path), 1):
        text, tab, raw = line.rpartition("\t")
        if not tab:
            raise NBestFormatError(path, number, "truncated line: expected 'text<TAB>score'", line)
        rows.append((text, raw, parse_score(raw, path, number)))
    if manifest is not None:
        utts = read_manifest(manifest)
        if len(rows) % len(utts):
            raise NBestFormatError(path, None, f"{len(rows)} beams do not divide evenly over the {len(utts)} manifest lines of {manifest}")
        beam_size = len(rows) // len(utts)
    elif beam_size is None:
        raise NBestFormatError(path, None, "NeMo beams need the manifest (refs=...) or beam_size to be grouped")
    elif beam_size < 1 or len(rows) % beam_size:
        raise NBestFormatError(path, None, f"{len(rows)} lines are not a multiple of beam_size", beam_size)
    else:
        utts = [(str(i), None, None) for i in range(len(rows) // beam_size)]
    utterances = []
    for index, (uid, ref, _) in enumerate(utts):
        block = rows[index * beam_size : (index + 1) * beam_size]
        hyps = tuple(Hypothesis(text, {"score": value}, {"score": raw}) for text, raw, value in block)
        utterances.append(Utterance(uid, hyps, ref, origin=f"{path}:{index * beam_size + 1}"))
    return NBest(utterances, fmt="nemo", meta={"beam_size": str(beam_size)}, source=str(path))


def write(nbest: NBest, path: str | Path, manifest: str | Path | None = None, score_column: str | None = None) -> None:
    """Write the TSV (and, if asked, a manifest with the ids as ``<id>.wav`` and the references); the overall
    column (:class:`Target`) is the score. Every utterance needs the same beam size; without a manifest the
    ids are not written (the TSV has none)."""
    sizes = {len(u.hyps) for u in nbest}
    if len(sizes) > 1:
        raise NBestFormatError(path, None, "NeMo TSV needs the same number of beams for every utterance", sorted(sizes))
    if manifest is not None:
        for utt in nbest:
            check_stem_id(utt.id, manifest)
    target = Target.of(nbest, "nemo", path, score_column)
    lines = [f"{h.text}\t{target.value(u, h, target.overall(u, h))}" for u in nbest for h in u.hyps]
    write_text(path, text_lines(lines, path))
    if manifest is not None:
        rows = [json_line({"audio_filepath": f"{u.id}.wav", "text": u.ref or ""}) for u in nbest]
        write_text(manifest, text_lines(rows, manifest))
