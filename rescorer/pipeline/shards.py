"""Where a tuned rescorer applied to a corpus of any size puts it: many N-best files (shards), each re-ranked and
written in its own format under ``out_dir/shards/`` as soon as it is done. A finished
shard is recorded (``out_dir/done/NAME.json``: its input's content digest, the job and its output's size and time)
and never redone while all three hold, so a killed run resumes where it stopped."""
from __future__ import annotations

import contextlib
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import msgspec

from ..engine.progress import Meter
from ..filehash import content_digest
from ..files import record_text, record_value, write_text
from ..io import block_writer
from ..safetext import visible
from ..outdir import SHARDED, SHARDS, Job, RunDir, open_out_dir
from ..types import NBest
from .applying import Applied, Summary
from .stream import Output
from ..tuned.file import Tuned

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
class ShardRecord(Applied):
    """What ``done/NAME.json`` holds of a finished shard: what applying it gave, the job, the content digest of its
    input and its output's size and time (:func:`stamp`)."""

    job: str = ""
    content: str = ""
    output: list[int] = field(default_factory=list)


class Shards:
    """Where a sharded apply's shards go: ``out_dir`` opened for the job (:func:`~rescorer.outdir.open_out_dir`:
    apart from the ``reads`` and the inputs ``paths``, by output name), each shard written in its own format to
    ``out_dir/shards/NAME`` as soon as it is done (not judged), recorded in ``done/NAME.json``, and kept as it is by
    a later run of the same job while its input's content and its output are as recorded; progress is told shard
    by shard."""

    kind, examples, judge, checks_depth = "shard", EXAMPLES, False, True

    def __init__(self, out_dir: str | Path, paths: Mapping[str, Path], job: Mapping[str, object],
                 reads: Sequence[str | Path | None] = ()):
        self.out_dir, self.paths, self.job, self.reads = out_dir, paths, job, reads
        self.contents: dict[str, str] = {}
        self.sizes = {name: input_bytes(path) for name, path in paths.items()}  # the estimate: bytes per second
        self.meter = Meter("shards", len(paths), sum(self.sizes.values()), "shard", show=False)
        self.kept_names: list[str] = []
        self.folder = Job(Path(out_dir), str(job["job"]))

    @classmethod
    def of(cls, out_dir: str | Path, shards: Mapping[Path, str], tuned: Tuned, subset: Mapping[str, int | None],
           reads: Sequence[str | Path | None] = ()) -> "Shards":
        """The place of ``shards`` (an input's path and its output's name, from
        :func:`rescorer.io.inputs.named_inputs`) re-ranked by ``tuned``, of each what ``subset`` keeps (``every``,
        ``top``)."""
        return cls(out_dir, {name: path for path, name in shards.items()},
                   {"job": job_key(tuned, subset), "weights": dict(tuned.weights)}, reads)

    @contextlib.contextmanager
    def opened(self) -> Iterator[RunDir]:
        folder = open_out_dir(self.out_dir, [*self.reads, *self.paths.values()], SHARDED, self.job)
        assert isinstance(folder, Job)
        self.folder = folder
        yield RunDir(folder.path, folder.path)

    def kept(self, name: str) -> Applied | None:
        """The recorded result of shard ``name`` when it is finished for this job: an input of the same content
        (its digest taken now, before it is read: an input changed while it runs is redone next time), the same
        job, and its output as written; else None (it is done again, as is a shard whose record is unreadable)."""
        content = self.contents[name] = content_digest(self.paths[name])
        try:
            record = msgspec.convert(record_value(self.folder.record(name).read_text(encoding="utf-8")), ShardRecord)
        except (OSError, ValueError, msgspec.ValidationError):
            return None
        if (record.job, record.content, record.output) != (self.folder.key, content, stamp(self.folder.output(name))):
            return None
        self.meter.skip(1, self.sizes[name])
        self.kept_names.append(name)
        self.say(name, record, " (finished before)")
        return record

    @contextlib.contextmanager
    def outputs(self, name: str, like: NBest) -> Iterator[tuple[list[Output], dict[str, str]]]:
        path = self.folder.output(name)
        with block_writer(path, like) as write:
            yield [write], {"native": str(path)}

    def done(self, name: str, applied: Applied) -> None:
        """Record shard ``name`` as finished, its output written: a shard killed before its record is redone."""
        path = self.folder.output(name)
        record = ShardRecord(**vars(applied), job=self.folder.key, content=self.contents[name], output=stamp(path))
        write_text(self.folder.record(name), record_text(msgspec.to_builtins(record)) + "\n")
        self.meter.update(1, self.sizes[name])
        self.say(name, applied, "")

    def summary(self, applied: Mapping[str, Applied]) -> Summary:
        """Which shards an earlier run finished, how many changes the examples show, and which outputs of an earlier
        run on other inputs are not in this report."""
        kept = len(self.kept_names)
        notes = [f"{kept} of {len(applied)} shards were finished by an earlier run of this job and kept as they are"] \
            if kept else []
        total = sum(r.entry.changed_1best for r in applied.values())
        shown = sum(len(r.changes) for r in applied.values())
        if shown < total:
            notes.append(f"the examples show {shown} of the {total:,} changed 1-bests (up to {EXAMPLES} a shard)")
        others = sorted(p.name for p in (self.folder.path / SHARDS).iterdir()
                        if p.name not in applied and p.name[0] != ".")
        if others:
            notes.append(f"{len(others)} output(s) in {SHARDS}/ ({', '.join(others[:3])}"
                         f"{', …' if len(others) > 3 else ''}) come from an earlier run of this job on other inputs "
                         "and are not in this report: remove them, or use a new out_dir")
        counted = f"{len(applied)} shard{'s' if len(applied) != 1 else ''} "
        return Summary(notes, counted, f"Outputs in {self.folder.path}/{SHARDS}/: each shard re-ranked in its own "
                       "format; report.html shows the changes.", SHOWN)

    def say(self, name: str, applied: Applied, how: str) -> None:
        left = self.meter.remaining()
        self.meter.say(f"shard {len(self.contents)}/{len(self.paths)} {visible(name)}: {applied.entry.utterances:,} "
                       f"utterances, {applied.entry.changed_1best:,} 1-bests changed{how}"
                       + (f"; {left}" if left else ""))


def input_bytes(path: Path) -> int:
    """The size of a shard: its file, or every file of a decode directory."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size
