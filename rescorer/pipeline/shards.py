"""Apply a tuned rescorer to a corpus of any size: many N-best files (shards), each read, scored in pieces that keep
a recording's utterances together, re-ranked and written in its own format under ``out_dir/shards/``. A finished
shard is recorded (``out_dir/done/NAME.json``: its input's content digest, the job and its output's size and time)
and never redone while all three hold, so a killed run resumes where it stopped."""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import msgspec

from ..bulk import paused_gc
from ..changes import Change
from ..engine import BoundScorer
from ..engine.progress import Meter
from ..filehash import content_digest
from ..files import record_text, record_value, write_text
from ..io import block_writer
from ..io.sets import NBestSet
from ..log import warning as warn
from ..metrics import Metric
from ..report import Report, SetReport
from ..safetext import visible
from ..options import RunOptions
from ..outdir import SHARDED, SHARDS, Job, RunDir, open_out_dir
from .rescore import depth_warnings, weights_text
from .results import write_run
from .stream import CHUNK, Tally, apply_blocks, set_blocks
from .tuned import Tuned

EXAMPLES = 20  # changed 1-bests kept per shard for the report
SHOWN = 20  # shards the terminal shows (report.md and report.html have them all)


def job_key(tuned: Tuned, subset: Mapping[str, int | None]) -> str:
    """What makes two runs the same job: the weights, the base and tuned columns, each scorer's signature (its
    model by content) and what each shard keeps (``subset``: ``every``, ``top``), not where the tuned file or its
    models lie."""
    what = {"base": tuned.base.name, "weights": dict(tuned.weights), "penalties": [
        [c.name, c.penalty, c.alpha] for c in (tuned.base, *tuned.columns)],
        "scorers": {name: entry.get("signature") for name, entry in tuned.scorers.items()},
        **({"subset": dict(subset)} if subset != {"every": 1, "top": None} else {})}
    return hashlib.blake2b(record_text(what, sort_keys=True).encode(), digest_size=16).hexdigest()


def stamp(path: Path) -> list[int]:
    """Size and modification time of a file (a directory: of its newest file), to tell an output changed since it
    was written without reading it."""
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    stats = [p.stat() for p in files]
    return [sum(s.st_size for s in stats), max((s.st_mtime_ns for s in stats), default=0)]


@dataclass(frozen=True)
class ShardResult:
    """One finished shard: its report entry and up to :data:`EXAMPLES` changed 1-bests."""

    entry: SetReport
    changes: list[Change]
    seconds: float
    depth: int  # the most hypotheses of an utterance


@dataclass(frozen=True)
class ShardRecord(ShardResult):
    """What ``done/NAME.json`` holds of a finished shard: its result, the job, the content digest of its input and
    its output's size and time (:func:`stamp`)."""

    job: str
    content: str
    output: list[int]


def rerank_file(source: NBestSet, out: Path, tuned: Tuned, scorers: Mapping[str, BoundScorer], metric: Metric,
                chunk: int) -> ShardResult:
    """Shard ``source`` re-ranked into ``out`` in its format (atomically), read, scored and written a piece of
    ``chunk`` utterances at a time (:func:`~rescorer.pipeline.stream.apply_blocks`)."""
    start = time.perf_counter()
    like, blocks = set_blocks(source)
    tally = Tally(like.fmt, metric, EXAMPLES, judge=False)
    with block_writer(out, like) as write:
        apply_blocks(blocks, tuned, scorers, tally, size=chunk, outputs=[write])
    return ShardResult(tally.entry(RunOptions()), tally.changes, time.perf_counter() - start, tally.depth)


def finished(job: Job, name: str, content: str) -> ShardResult | None:
    """The recorded result of shard ``name`` when it is finished for ``job``: an input of the same ``content``
    (:func:`~rescorer.filehash.content_digest`), the same job, and its output as written (size and time); else None
    (it is done again, as is a shard whose record is unreadable or recorded without a content digest)."""
    try:
        record = msgspec.convert(record_value(job.record(name).read_text(encoding="utf-8")), ShardRecord)
    except (OSError, ValueError, msgspec.ValidationError):
        return None
    same = record.job == job.key and record.content == content and record.output == stamp(job.output(name))
    return record if same else None


def finish(job: Job, name: str, content: str, result: ShardResult) -> None:
    """Record shard ``name`` as finished for ``job`` from an input of ``content`` (its digest taken before it was
    read), its output written: a shard killed before its record is redone."""
    path = job.output(name)
    result.entry.outputs = {"native": str(path)}
    record = ShardRecord(**vars(result), job=job.key, content=content, output=stamp(path))
    write_text(job.record(name), record_text(msgspec.to_builtins(record)) + "\n")


def apply_shards(shards: Mapping[Path, str], tuned: Tuned, scorers: Mapping[str, BoundScorer], *,
                 out_dir: str | Path, fmt: str = "auto", chunk: int = CHUNK, data: str = "data",
                 source: str | None = None, every: int = 1, top: int | None = None,
                 folders: Sequence[Path] = ()) -> Report:
    """Re-rank every shard (an input's path and its output's name, from
    :func:`rescorer.io.inputs.named_inputs`) with ``tuned`` and its ``scorers``, one shard in memory at a time,
    each written to ``out_dir/shards/NAME`` in its own format as soon as it is done; shards finished by an earlier run
    of the same job from inputs of the same content are kept as they are; of each, every ``every``-th utterance, each
    cut to its best ``top``; ``folders``: the paths the inputs were named by (a directory, a list file: out_dir
    may not lie in one).
    The report (``report.json``, ``.md``, ``.html``) has a row per shard.

    Each input is read once more, to digest its content before it is kept or re-ranked (about 2 ms a MB: some 5% of
    an apply on the lists' own columns, which re-ranks 25-38 MB/s, and nothing beside an LM's scoring); a resumed
    job reads every finished input once to check it."""
    paths = list(shards)
    job = open_out_dir(out_dir, [*folders, *paths, source, *(s.store_path for s in scorers.values())], SHARDED,
                       {"job": job_key(tuned, {"every": every, "top": top}), "weights": dict(tuned.weights)})
    assert isinstance(job, Job)
    metric = tuned.make_metric()
    results: dict[str, ShardResult] = {}
    sizes = {path: input_bytes(path) for path in paths}  # the estimate: input bytes re-ranked per second
    meter = Meter("shards", len(paths), sum(sizes.values()), "shard", show=False)
    kept = 0
    for k, path in enumerate(paths, 1):
        name = shards[path]
        content = content_digest(path)  # before the shard is read: an input changed while it runs is redone next time
        result = finished(job, name, content)
        before = result is not None
        if result is None:
            with paused_gc():
                result = rerank_file(NBestSet(str(path), fmt=fmt, every=every, top=top), job.output(name), tuned,
                                     scorers, metric, chunk)
            if not any(r.depth == result.depth for r in results.values()):  # each depth said once
                for warning in depth_warnings({f"shard {name}": result.depth}, tuned):
                    warn(visible(warning))
            finish(job, name, content, result)
            meter.update(1, sizes[path])
        else:
            meter.skip(1, sizes[path])
            kept += 1
        results[name] = result
        left = meter.remaining()
        meter.say(f"shard {k}/{len(paths)} {visible(name)}: {result.entry.utterances:,} utterances, "
                  f"{result.entry.changed_1best:,} 1-bests changed" + (" (finished before)" if before else "")
                  + (f"; {left}" if left else ""))
    return write_job_report(job, results, tuned, metric, scorers, data, source, kept)


def input_bytes(path: Path) -> int:
    """The size of a shard: its file, or every file of a decode directory."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size


def write_job_report(job: Job, results: Mapping[str, ShardResult], tuned: Tuned, metric: Metric,
                     scorers: Mapping[str, BoundScorer], data: str, source: str | None, kept: int) -> Report:
    """The report of every shard, from their records: ``report.json``, ``report.md`` and ``report.html``."""
    notes = [f"{kept} of {len(results)} shards were finished by an earlier run of this job and kept as they are"] \
        if kept else []
    total = sum(r.entry.changed_1best for r in results.values())
    shown = sum(len(r.changes) for r in results.values())
    if shown < total:
        notes.append(f"the examples show {shown} of the {total:,} changed 1-bests (up to {EXAMPLES} a shard)")
    others = sorted(p.name for p in (job.path / SHARDS).iterdir() if p.name not in results and p.name[0] != ".")
    if others:
        notes.append(f"{len(others)} output(s) in {SHARDS}/ ({', '.join(others[:3])}{', …' if len(others) > 3 else ''}"
                     ") come from an earlier run of this job on other inputs and are not in this report: remove "
                     "them, or use a new out_dir")
    depths: dict[int, list[str]] = {}
    for name, result in results.items():
        depths.setdefault(result.depth, []).append(name)
    warnings = depth_warnings({f"{len(names)} shard(s) ({', '.join(names[:3])}{', …' if len(names) > 3 else ''})":
                               depth for depth, names in depths.items()}, tuned)
    report = Report.of(task="apply", data=data, metric=metric, base=tuned.base, columns=tuned.columns,
                       weights=tuned.weights, method=tuned.search, tuned_on=tuned.tuned_on,
                       scorers={column: scorer.signature for column, scorer in scorers.items()},
                       sets={name: r.entry for name, r in results.items()}, tuned=source, notes=notes,
                       warnings=warnings)
    write_run(RunDir(job.path, job.path), report, {name: r.changes for name, r in results.items()}, metric, tuned,
              f"{data}: {len(results)} shards re-ranked with {weights_text(tuned.weights)}", None,
              f"Outputs in {job.path}/{SHARDS}/: each shard re-ranked in its own format; report.html shows the "
              "changes.", SHOWN)
    return report
