"""ESPnet2 ``{n}best_recog`` directories and ESPnet1 ``data.json`` (formats-reference §1–2)."""
from __future__ import annotations

import re
from pathlib import Path

from ..errors import NBestFormatError
from ..files import atomic_dir, write_text
from ..types import Hypothesis, NBest, Utterance
from .codec import document, load_json, loads, value_text
from .common import (find_key, format_number, id_lines, json_score, parse_score, present, read_lines, read_text,
                     require_ranks, split_key)
from .format import Sample
from .target import Target

_RANK_DIR = re.compile(r"^(\d+)best_recog$")
_TARGET = re.compile(r"^target1\[(\d+)\]$")


# ---------------------------------------------------------------- ESPnet2
def detect_espnet2(sample: Sample) -> bool:
    """An ESPnet2 decode directory: ``<n>best_recog/`` in it or in its ``logdir/output.*`` jobs."""
    return bool(_job_roots(sample.path))


def _job_roots(path: Path) -> list[Path]:
    if any(_RANK_DIR.match(p.name) for p in path.iterdir() if p.is_dir()):
        return [path]
    jobs = sorted(path.glob("logdir/output.*"), key=lambda p: int(p.suffix[1:]) if p.suffix[1:].isdigit() else 0)
    return [job for job in jobs if job.is_dir() and any(_RANK_DIR.match(p.name) for p in job.iterdir())]


def _read_kv(path: Path, required_value: bool) -> dict[str, tuple[str, int]]:
    """``key<space or tab>value`` lines (ESPnet reads them with ``split(maxsplit=1)``) → {key: (value, line)};
    a duplicate key is an error."""
    out: dict[str, tuple[str, int]] = {}
    for number, line in enumerate(read_lines(path), 1):
        if not line.strip():
            raise NBestFormatError(path, number, "blank line")
        key, value = split_key(line)
        if required_value and not value.strip():
            raise NBestFormatError(path, number, "truncated line (no value after the utterance id)", line)
        if key in out:
            raise NBestFormatError(path, number, "duplicate utterance id (duplicate rank)", key)
        out[key] = (value, number)
    return out


def _rank_dirs(root: Path) -> list[Path]:
    found = {int(m.group(1)): p for p in root.iterdir() if p.is_dir() and (m := _RANK_DIR.match(p.name))}
    ranks = sorted(found)
    for expected, rank in enumerate(ranks, 1):
        if rank != expected:
            raise NBestFormatError(root / f"{expected}best_recog", None, "missing rank directory", f"{expected}best_recog")
    return [found[r] for r in ranks]


def read_espnet2(path: str | Path) -> NBest:
    """Read an ESPnet2 decode directory (or one ``logdir/output.N`` job of it)."""
    path = Path(path)
    roots = _job_roots(path) if path.is_dir() else []
    if not roots:
        raise NBestFormatError(path, None, "no '<n>best_recog' directories found")
    utterances: list[Utterance] = []
    for root in roots:
        utterances.extend(_read_job(root))
    ids = [u.id for u in utterances]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise NBestFormatError(path, None, "utterance id appears in two jobs", dup)
    return NBest(utterances, fmt="espnet2", source=str(path))


def _read_job(root: Path) -> list[Utterance]:
    per_rank: list[dict[str, Hypothesis]] = []
    origins: dict[str, str] = {}
    order: list[str] = []
    for rank, rank_dir in enumerate(_rank_dirs(root), 1):
        text_path, score_path, parts_path = rank_dir / "text", rank_dir / "score", rank_dir / "scores"
        texts = _read_kv(text_path, required_value=False)
        scores = _read_kv(rank_dir / "score", required_value=True)
        parts = _read_kv(parts_path, True) if present(parts_path) else None
        tokens = _read_kv(rank_dir / "token", False) if present(rank_dir / "token") else None
        for name, table in (("score", scores), ("scores", parts), ("token", tokens)):
            if table is None:
                continue
            for key, (_, number) in table.items():
                if key not in texts:
                    raise NBestFormatError(rank_dir / name, number, "utterance id not in the text file", key)
            for key, (_, number) in texts.items():
                if key not in table:
                    raise NBestFormatError(text_path, number, f"utterance id missing from {name}", key)
        hyps: dict[str, Hypothesis] = {}
        for key, (text, number) in texts.items():
            if rank == 1:
                order.append(key)
                origins[key] = f"{text_path}:{number}"
            elif key not in per_rank[-1]:
                raise NBestFormatError(text_path, number, f"utterance has rank {rank} but no rank {rank - 1}", key)
            raw_score, score_line = scores[key]
            raw = {"score": raw_score.strip()}
            values = {"score": parse_score(raw_score, score_path, score_line)}
            if parts is not None:
                raw_parts, parts_line = parts[key]
                for column, value in _parse_parts(raw_parts, parts_path, parts_line).items():
                    raw[column] = value
                    values[column] = parse_score(value, parts_path, parts_line, column)
            token = tokens[key][0].strip() if tokens is not None else None
            hyps[key] = Hypothesis(text=text.strip(), scores=values, raw=raw, tokens=token)
        per_rank.append(hyps)
    return [
        Utterance(id=key, hyps=tuple(r[key] for r in per_rank if key in r), origin=origins[key])
        for key in order
    ]


def _parse_parts(value: str, path: Path, line: int) -> dict[str, str]:
    parts = load_json(value, path, line)
    if not isinstance(parts, dict):
        raise NBestFormatError(path, line, "scores are not a JSON object", value)
    if "score" in parts:
        raise NBestFormatError(path, line, "a partial score may not be called 'score'", value)
    return {str(k): v if isinstance(v, str) else value_text(v) for k, v in parts.items()}


def write_espnet2(nbest: NBest, path: str | Path, score_column: str | None = None) -> None:
    """Write ``{n}best_recog/{text,score[,scores][,token]}``: the overall column (:class:`Target`) goes to
    ``score``, every other column by name to ``scores`` (a JSON object per line; ESPnet itself never writes it).
    The 1-best also goes to ``text``, ``score`` (and ``token``) at the top, sorted by id, as ``asr.sh`` leaves a
    decode directory for its scoring stage."""
    target = Target.of(nbest, "espnet2", path, score_column)
    depth = max((len(u.hyps) for u in nbest), default=0)
    with atomic_dir(path) as tmp:
        _write_1best(nbest, target, tmp, path)
        for rank in range(depth):
            files: dict[str, list[tuple[str, str | None]]] = {"text": [], "score": [], "scores": [], "token": []}
            for utt in nbest:
                if rank >= len(utt.hyps):
                    continue
                hyp = utt.hyps[rank]
                rest = {c: _value(target, hyp, c) for c in target.others(utt, hyp)}
                files["text"].append((utt.id, hyp.text))
                files["score"].append((utt.id, _value(target, hyp, target.overall(utt, hyp))))
                files["scores"].append((utt.id, value_text(rest) if rest else None))
                files["token"].append((utt.id, hyp.tokens))
            rank_dir = tmp / f"{rank + 1}best_recog"
            rank_dir.mkdir()
            for name, rows in files.items():
                if all(value is None for _, value in rows):
                    continue
                default = "{}" if name == "scores" else ""
                body = id_lines(((key, default if value is None else value) for key, value in rows), path)
                (rank_dir / name).write_text(body, encoding="utf-8")


def _write_1best(nbest: NBest, target: Target, tmp: Path, path: str | Path) -> None:
    """The top-level ``text``/``score``/``token`` of an ESPnet2 decode directory: each utterance's first hypothesis."""
    best = sorted(((u.id, u, u.hyps[0]) for u in nbest if u.hyps), key=lambda row: row[0])
    (tmp / "text").write_text(id_lines(((key, h.text) for key, _, h in best), path), encoding="utf-8")
    scores = ((key, _value(target, h, target.overall(utt, h))) for key, utt, h in best)
    (tmp / "score").write_text(id_lines(scores, path), encoding="utf-8")
    if any(h.tokens is not None for _, _, h in best):
        (tmp / "token").write_text(id_lines(((key, h.tokens or "") for key, _, h in best), path), encoding="utf-8")


def _value(target: Target, hyp: Hypothesis, column: str) -> str:
    raw = target.raw(hyp, column)
    return raw if raw is not None else f"tensor({format_number(hyp.scores[column])})"


# ---------------------------------------------------------------- ESPnet1
def detect_espnet1(sample: Sample) -> bool:
    """An ESPnet1 ``data.json``: a JSON object with ``utts``."""
    return sample.document is not None and "utts" in sample.document


def read_espnet1(path: str | Path) -> NBest:
    """Read ESPnet1 ``data.json`` (``{"utts": {id: {"output": [...]}}}``)."""
    path = Path(path)
    text = read_text(path)
    doc = load_json(text, path)
    if not isinstance(doc, dict) or not isinstance(doc.get("utts"), dict):
        raise NBestFormatError(path, 1, "expected a JSON object with an 'utts' object", text[:40])
    utterances = []
    cursor = -1
    for utt_id, entry in doc["utts"].items():
        line, cursor = find_key(text, utt_id, cursor + 1)
        outputs = entry.get("output") if isinstance(entry, dict) else None
        if not isinstance(outputs, list) or not outputs:
            raise NBestFormatError(path, line, "utterance has no 'output' list", utt_id)
        if isinstance(outputs[0], list):
            raise NBestFormatError(path, line, "multi-speaker output (list of lists) is not supported", utt_id)
        hyps, ranks, ref = [], [], None
        for out in outputs:
            name = str(out.get("name", "")) if isinstance(out, dict) else ""
            line, cursor = find_key(text, name, cursor + 1) if name else (line, cursor)
            if not isinstance(out, dict) or "rec_text" not in out or "score" not in out:
                raise NBestFormatError(path, line, "output entry lacks 'rec_text' or 'score'", out)
            match = _TARGET.match(name)
            if not match:
                raise NBestFormatError(path, line, "output name is not 'target1[n]'", out.get("name"))
            if int(match.group(1)) in ranks:
                raise NBestFormatError(path, line, f"duplicate rank {match.group(1)} for utterance", utt_id)
            ranks.append(int(match.group(1)))
            raw = out["score"] if isinstance(out["score"], str) else value_text(out["score"])
            values, raws = {"score": parse_score(raw, path, line)}, {"score": raw}
            for column, value in (out.get("scores") or {}).items():
                raws[column] = value if isinstance(value, str) else value_text(value)
                values[column] = parse_score(raws[column], path, line, column)
            rec = str(out["rec_text"]).replace("<eos>", "").replace("\u2581", " ")
            skip = ("name", "rec_text", "score", "scores", "text", "rec_token")
            meta = {k: value_text(v) for k, v in out.items() if k not in skip}
            hyps.append(Hypothesis(" ".join(rec.split()), values, raws, out.get("rec_token"), meta))
            ref = out.get("text", ref)
        require_ranks(ranks, path, line, utt_id)
        hyps = [h for _, h in sorted(zip(ranks, hyps), key=lambda p: p[0])]
        meta = {k: value_text(v) for k, v in entry.items() if k != "output"}
        utterances.append(Utterance(utt_id, tuple(hyps), ref, meta, origin=f"{path}:{line}"))
    return NBest(utterances, fmt="espnet1", source=str(path))


def write_espnet1(nbest: NBest, path: str | Path, score_column: str | None = None) -> None:
    """Write ESPnet1 ``data.json`` with ``target1[n]`` entries; columns besides the overall one go to ``scores``."""
    target = Target.of(nbest, "espnet1", path, score_column)
    utts = {}
    for utt in nbest:
        outputs = []
        for rank, hyp in enumerate(utt.hyps, 1):
            score = json_score(target.value(utt, hyp, target.overall(utt, hyp)))
            out = {"name": f"target1[{rank}]", "rec_text": f"{hyp.text}<eos>", "score": score}
            extra = {c: json_score(target.value(utt, hyp, c)) for c in target.others(utt, hyp)}
            if extra:
                out["scores"] = extra
            if hyp.tokens is not None:
                out["rec_token"] = hyp.tokens
            if utt.ref is not None:
                out["text"] = utt.ref
            out.update({k: loads(v) for k, v in target.meta(hyp.meta).items()})
            outputs.append(out)
        utts[utt.id] = {"output": outputs, **{k: loads(v) for k, v in target.meta(utt.meta).items()}}
    write_text(path, document({"utts": utts}, indent=4))
