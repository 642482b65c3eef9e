"""ESPnet2 ``{n}best_recog`` directories and ESPnet1 ``data.json`` (formats-reference §1–2)."""
from __future__ import annotations

import contextlib
import heapq
import itertools
import re
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Iterable, Iterator

from ..errors import NBestFormatError
from ..files import atomic_dir, write_text
from ..types import Hypothesis, NBest, Utterance
from .codec import document, load_json, loads, value_text
from .seen import Seen
from .common import (KeyedLines, find_key, format_number, id_lines, json_score, parse_score, present, read_text,
                     require_ranks, blocks_of)
from .format import Sample
from .target import Target

SORT_RUN = 100_000  # lines of a top-level 1-best file sorted in memory at a time

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


def _rank_dirs(root: Path) -> list[Path]:
    found = {int(m.group(1)): p for p in root.iterdir() if p.is_dir() and (m := _RANK_DIR.match(p.name))}
    ranks = sorted(found)
    for expected, rank in enumerate(ranks, 1):
        if rank != expected:
            raise NBestFormatError(root / f"{expected}best_recog", None, "missing rank directory", f"{expected}best_recog")
    return [found[r] for r in ranks]


def espnet2_blocks(path: str | Path, size: int = 0) -> Iterator[NBest]:
    """An ESPnet2 decode directory (or one ``logdir/output.N`` job of it) as blocks of ``size`` utterances (0: as
    read), its jobs one after another, every ``<k>best_recog`` file read a line at a time in step with
    ``1best_recog/text``, which gives the order: each file lists its ids in that order, as ESPnet writes them."""
    path = Path(path)
    roots = _job_roots(path) if path.is_dir() else []
    if not roots:
        raise NBestFormatError(path, None, "no '<n>best_recog' directories found")
    seen = Seen()  # the ids read so far → the job they were read in
    utterances = (utt for job, root in enumerate(roots) for utt in _job(root, job, seen))
    yield from blocks_of(utterances, size, lambda found: NBest(found, fmt="espnet2", source=str(path)))


def _job(root: Path, job: int, seen: Seen) -> Iterator[Utterance]:
    """The utterances of one job, in the order of its ``1best_recog/text``."""
    with contextlib.ExitStack() as stack:
        ranks: list[_Rank] = []
        for rank, directory in enumerate(_rank_dirs(root), 1):
            ranks.append(stack.enter_context(_Rank(directory, rank, job, seen)))
        first = ranks[0].text
        while first.key is not None:
            key, number = first.key, first.number
            seen[key] = job
            hyps: list[Hypothesis] = []
            for rank in ranks:
                if rank.text.key == key:
                    if len(hyps) < rank.rank - 1:
                        raise NBestFormatError(rank.text.path, rank.text.number,
                                               f"utterance has rank {rank.rank} but no rank {rank.rank - 1}", key)
                    hyps.append(rank.take())
            yield Utterance(id=key, hyps=tuple(hyps), origin=f"{first.path}:{number}")
        for rank in ranks:
            rank.finish()


class _Rank:
    """One ``<k>best_recog`` directory of a job, read in step with the job's ``1best_recog/text``: its ``text`` and
    the ``score`` (``scores``, ``token``) files beside it, each at the line of the next hypothesis it holds."""

    def __init__(self, directory: Path, rank: int, job: int, seen: Seen) -> None:
        self.rank, self.job, self.seen = rank, job, seen
        with contextlib.ExitStack() as stack:
            self.text, self.score, self.parts, self.tokens = (
                stack.enter_context(KeyedLines(directory / name)) if required or present(directory / name) else None
                for name, required in (("text", True), ("score", True), ("scores", False), ("token", False)))
            self._check_order()
            self.stack = stack.pop_all()

    def __enter__(self) -> "_Rank":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stack.close()

    def take(self) -> Hypothesis:
        """The hypothesis of the text file's line in hand, and every file on to its next line."""
        text, score, parts = self.text, self._beside(self.score, True), self._beside(self.parts, True)
        raw = {"score": score.value.strip()}
        values = {"score": parse_score(score.value, score.path, score.number)}
        if parts is not None:
            for column, value in _parse_parts(parts.value, parts.path, parts.number).items():
                raw[column] = value
                values[column] = parse_score(value, parts.path, parts.number, column)
        tokens = self._beside(self.tokens, False)
        hyp = Hypothesis(text=text.value.strip(), scores=values, raw=raw,
                         tokens=tokens.value.strip() if tokens is not None else None)
        for lines in (text, score, parts, tokens):
            if lines is not None:
                lines.advance()
        self._check_order()
        return hyp

    def _beside(self, lines: KeyedLines | None, required: bool) -> KeyedLines | None:
        """A file beside the text file, at the text file's line in hand (its id, and a value if ``required``)."""
        if lines is None:
            return None
        text = self.text
        if lines.key != text.key:
            if lines.key is None:
                raise NBestFormatError(text.path, text.number, f"utterance id missing from {lines.path.name}", text.key)
            if lines.key == lines.before:
                raise NBestFormatError(lines.path, lines.number, "duplicate utterance id (duplicate rank)", lines.key)
            raise NBestFormatError(lines.path, lines.number, f"utterance id not in the order of the text file "
                                   f"(line {text.number} there: {text.key!r})", lines.key)
        if required and not lines.value.strip():
            raise NBestFormatError(lines.path, lines.number, "truncated line (no value after the utterance id)",
                                   lines.line)
        return lines

    def _check_order(self) -> None:
        """The text file's id in hand is not one the job's ``1best_recog/text`` has gone past."""
        text = self.text
        if text.key not in self.seen:
            return
        if text.key == text.before or self.rank == 1 and self.seen[text.key] == self.job:
            raise NBestFormatError(text.path, text.number, "duplicate utterance id (duplicate rank)", text.key)
        if self.rank == 1:
            raise NBestFormatError(text.path, text.number, "utterance id appears in two jobs", text.key)
        raise NBestFormatError(text.path, text.number, "utterance id not in the order of 1best_recog/text"
                               if self.seen[text.key] == self.job else "utterance id not in this job's "
                               "1best_recog/text", text.key)

    def finish(self) -> None:
        """Past the job's last utterance: no line is left in the rank's files."""
        text = self.text
        if text.key is not None:
            raise NBestFormatError(text.path, text.number, f"utterance has rank {self.rank} but no rank "
                                   f"{self.rank - 1}", text.key)
        for lines in (self.score, self.parts, self.tokens):
            if lines is not None and lines.key is not None:
                problem = "duplicate utterance id (duplicate rank)" if lines.key == lines.before else \
                    "utterance id not in the text file"
                raise NBestFormatError(lines.path, lines.number, problem, lines.key)


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
    with espnet2_writer(path, nbest, score_column) as write:
        write(nbest)


@contextlib.contextmanager
def espnet2_writer(path: str | Path, like: NBest, score_column: str | None = None) -> Iterator[Callable[[NBest], None]]:
    """A writer of ESPnet2 decode-directory blocks (:func:`write_espnet2`; raw values kept where ``like`` was read
    from ESPnet2): each rank's files written as the blocks come, the directory in place when the context ends."""
    target = Target.of(like, "espnet2", path, score_column)
    with atomic_dir(path) as tmp:
        ranks: list[_RankWriter] = []
        ids = _Sorted()

        def write(block: NBest) -> None:
            ids.add(u.id for u in block if u.hyps)
            for rank in range(block.depth):
                if rank == len(ranks):
                    ranks.append(_RankWriter(tmp / f"{rank + 1}best_recog", path))
                ranks[rank].write([(u, u.hyps[rank]) for u in block if rank < len(u.hyps)], target)
        yield write
        for rank in ranks:
            rank.finish()
        _write_1best(tmp, ids.sorted)


class _Sorted:
    """Whether the ids given so far came in sorted order."""

    def __init__(self) -> None:
        self.sorted, self.last = True, None

    def add(self, ids: Iterable[str]) -> None:
        for key in ids:
            self.sorted = self.sorted and (self.last is None or self.last < key)
            self.last = key


class _RankWriter:
    """One ``<k>best_recog`` directory being written, each block's rows added to its files; ``scores`` and
    ``token`` are removed at the end where every row was the default (no hypothesis had a value for it)."""

    FILES = ("text", "score", "scores", "token")

    def __init__(self, directory: Path, output: str | Path) -> None:
        directory.mkdir()
        self.directory, self.output, self.lines = directory, output, 0
        self.held = dict.fromkeys(self.FILES, False)

    def write(self, rows: list[tuple[Utterance, Hypothesis]], target: Target) -> None:
        files: dict[str, list[tuple[str, str | None]]] = {name: [] for name in self.FILES}
        for utt, hyp in rows:
            rest = {c: _value(target, hyp, c) for c in target.others(utt, hyp)}
            files["text"].append((utt.id, hyp.text))
            files["score"].append((utt.id, _value(target, hyp, target.overall(utt, hyp))))
            files["scores"].append((utt.id, value_text(rest) if rest else None))
            files["token"].append((utt.id, hyp.tokens))
        for name, found in files.items():
            self.held[name] = self.held[name] or any(value is not None for _, value in found)
            default = "{}" if name == "scores" else ""
            with (self.directory / name).open("a", encoding="utf-8") as out:
                out.write(id_lines(((key, default if value is None else value) for key, value in found), self.output,
                                   self.lines + 1))
        self.lines += len(rows)

    def finish(self) -> None:
        """Remove the files that hold only defaults."""
        for name, held in self.held.items():
            if not held:
                (self.directory / name).unlink()


def _write_1best(tmp: Path, in_order: bool) -> None:
    """The top-level ``text``/``score``/``token`` of an ESPnet2 decode directory: those of ``1best_recog``, sorted by
    id (copied as they are when the ids came sorted)."""
    first = tmp / "1best_recog"
    for name in ("text", "score", "token"):
        source = first / name
        if not source.is_file():
            if name != "token":
                (tmp / name).write_bytes(b"")
        elif in_order:
            shutil.copyfile(source, tmp / name)
        else:
            sort_lines(source, tmp / name, SORT_RUN)


def sort_lines(source: Path, target: Path, run: int) -> None:
    """The lines of ``source`` sorted by id (the bytes before the first space: UTF-8 sorts as its text does; lines
    of one id keep their order) into ``target``, holding ``run`` lines at a time: sorted runs, spilled beside
    ``target`` and merged."""
    with contextlib.ExitStack() as stack, source.open("rb") as rows:
        runs = []
        while chunk := list(itertools.islice(rows, run)):
            chunk.sort(key=_id_of)
            spill = stack.enter_context(tempfile.TemporaryFile(dir=target.parent))
            spill.writelines(chunk)
            spill.seek(0)
            runs.append(spill)
            del chunk
        with target.open("wb") as out:
            out.writelines(heapq.merge(*runs, key=_id_of))


def _id_of(line: bytes) -> bytes:
    return line.partition(b" ")[0].rstrip(b"\n")


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
