"""fairseq-generate / fairseq-interactive output: S/T/H/D/P lines (formats-reference §3).

Scores are base-2 from fairseq 0.10 on (the output has D lines) and natural log
before; ``log_base`` overrides the guess. Hypothesis text is the detokenized D
text when present (the H text is kept as ``tokens``).
"""
from __future__ import annotations

import math
import re
from pathlib import Path

from ..errors import NBestFormatError
from ..files import write_text
from ..types import Hypothesis, NBest, Utterance
from .common import parse_score, read_lines, text_lines
from .format import Sample
from .target import Target

LINE = re.compile(r"^([A-Z])-(\d+)\t")
_SPACED = re.compile(r"^[SHTDP]-\d+ ")
_IGNORED = set("AIEWC")


def looks_like(lines: list[str]) -> bool:
    return any(LINE.match(line) and line[0] in "HD" for line in lines)


def detect(sample: Sample) -> bool:
    """fairseq-generate/interactive output: ``H-<id>`` or ``D-<id>`` lines among the first."""
    return not sample.braced and looks_like(sample.lines)


def read(path: str | Path, log_base: str = "auto") -> NBest:
    path = Path(path)
    lines = read_lines(path)
    has_d = any(line.startswith("D-") and LINE.match(line) for line in lines)
    base = {"auto": "2" if has_d else "e", "2": "2", "e": "e"}.get(str(log_base))
    if base is None:
        raise NBestFormatError(path, None, "log_base must be auto, 2 or e", log_base)
    factor = math.log(2) if base == "2" else 1.0
    utts: dict[int, dict] = {}
    for number, line in enumerate(lines, 1):
        match = LINE.match(line)
        if not match:
            if _SPACED.match(line):
                raise NBestFormatError(path, number, "fields must be separated by tabs", line)
            continue
        kind, sid = match.group(1), int(match.group(2))
        if kind in _IGNORED:
            continue
        body = line[match.end():]
        utt = utts.setdefault(sid, {"hyps": [], "ref": None, "meta": {}, "origin": f"{path}:{number}"})
        if kind == "S":
            utt["meta"]["S"] = body
        elif kind == "T":
            utt["ref"] = body
        elif kind == "H":
            raw, _, text = body.partition("\t")
            utt["hyps"].append({"raw": raw, "score": parse_score(raw, path, number) * factor, "H": text, "line": number})
        elif kind in "DP":
            if not utt["hyps"]:
                raise NBestFormatError(path, number, f"{kind} line before any H line of sentence {sid}", line)
            if kind == "D":
                utt["hyps"][-1]["D"] = body.partition("\t")[2]
            else:
                utt["hyps"][-1]["P"] = body
        else:
            raise NBestFormatError(path, number, "unknown line type", line)
    if not utts:
        raise NBestFormatError(path, None, "no fairseq H- lines found")
    utterances = []
    for sid in sorted(utts):
        u = utts[sid]
        if not u["hyps"]:
            raise NBestFormatError(path, int(u["origin"].rsplit(":", 1)[1]), "sentence has no H line", sid)
        hyps = []
        for h in u["hyps"]:
            if has_d and "D" not in h:
                raise NBestFormatError(path, h["line"], "H line without its D line", h["H"])
            text = h.get("D", h["H"])
            tokens = h["H"] if "D" in h else None
            meta = {"P": h["P"]} if "P" in h else {}
            hyps.append(Hypothesis(text, {"score": h["score"]}, {"score": h["raw"]}, tokens, meta))
        utterances.append(Utterance(str(sid), tuple(hyps), u["ref"], u["meta"], origin=u["origin"]))
    return NBest(utterances, fmt="fairseq", meta={"log_base": base}, source=str(path))


def write(nbest: NBest, path: str | Path, score_column: str | None = None) -> None:
    """Write S/T/H/D/P lines: the overall column (:class:`Target`) as the score, in the file's log base (2 unless
    read from a natural-log fairseq file); other columns are dropped. Ids must be non-negative integers."""
    target = Target.of(nbest, "fairseq", path, score_column)
    base = target.meta(nbest.meta).get("log_base", "2")
    factor = math.log(2) if base == "2" else 1.0
    out = []
    for utt in nbest:
        sid, meta = utt.id, target.meta(utt.meta)
        if "S" in meta:
            out.append(f"S-{sid}\t{meta['S']}")
        if utt.ref is not None:
            out.append(f"T-{sid}\t{utt.ref}")
        for hyp in utt.hyps:
            score = target.value(utt, hyp, target.overall(utt, hyp), lambda v: v / factor)
            tokens = hyp.tokens if hyp.tokens is not None and base == "2" else hyp.text
            out.append(f"H-{sid}\t{score}\t{tokens}")
            if base == "2":
                out.append(f"D-{sid}\t{score}\t{hyp.text}")
            if "P" in target.meta(hyp.meta):
                out.append(f"P-{sid}\t{hyp.meta['P']}")
    write_text(path, text_lines(out, path))
