"""``out_dir`` checked and opened by one function for every task: apart from what the run reads, and new, empty or
an earlier output of the same kind — a run's or a convert's (replaced whole), a sharded apply's of the same job or a training's
(both resumed); anything else is refused in one line. A run's outputs are staged beside it and put in place whole
(:func:`run_dir`)."""
from __future__ import annotations

import contextlib
import errno
import fnmatch
import glob
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from .errors import ConfigError, NBestFormatError
from .files import atomic_dir, record_text, record_value, write_text

MARK = "report.json"  # a run's output, which the next run replaces whole
JOB, SHARDS, DONE = "job.json", "shards", "done"  # a sharded apply's: out_dir/job.json, shards/NAME, done/NAME.json
TRAINING = "config.json"  # a training's (task=distill), which the next training resumes
CONVERTED = ".converted.json"  # a convert's (task=convert), which the next convert replaces whole; hidden, so that
# its out_dir is itself the task.inputs of the next task (a directory's hidden files are not inputs)


@dataclass(frozen=True)
class Kind:
    """A kind of output: what it is called, the file that marks a directory holding it, and what may reuse it."""

    holds: str
    mark: str
    rule: str


RUN = Kind("an earlier run's outputs", MARK, "a run replaces only an earlier run's outputs")
SHARDED = Kind("a sharded apply's shards", JOB, "a sharded apply resumes only its own job")
TRAINED = Kind("a training run", TRAINING, "a training resumes only an earlier training")
CONVERT = Kind("converted lists", CONVERTED, "a convert replaces only an earlier convert's lists")
KINDS = (SHARDED, TRAINED, CONVERT, RUN)  # asked in this order: a sharded apply and a training write a report.json too


@dataclass(frozen=True)
class OutDir:
    """An ``out_dir`` checked and opened for a run (:func:`open_out_dir`)."""

    path: Path


@dataclass(frozen=True)
class Job(OutDir):
    """A sharded apply's ``out_dir``, opened for the job ``key``: where each shard's output and record go."""

    key: str

    def output(self, name: str) -> Path:
        return self.path / SHARDS / name

    def record(self, name: str) -> Path:
        return self.path / DONE / f"{name}.json"


def real(path: str | Path) -> Path:
    """``path`` absolute with every symlink resolved (as far as it exists)."""
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError):  # a symlink loop: compare it as written
        return Path(os.path.abspath(path))


def kind_held(path: Path) -> Kind | None:
    """The kind of output a directory holds, by its mark (:data:`KINDS`); None for anything else."""
    return next((kind for kind in KINDS if (path / kind.mark).is_file()), None)


def open_out_dir(out_dir: str | Path, reads: Iterable[str | Path | None], kind: Kind = RUN,
                 job: Mapping[str, Any] | None = None) -> OutDir:
    """``out_dir`` checked before a run of ``kind`` starts — not a file; apart from every path in ``reads`` (lists,
    references, a tuned rescorer, models, the score store, a folder of shards: it is, holds or lies inside none); new, empty or an
    earlier output of ``kind``; writable — and opened: a :class:`Job` for a sharded apply (``job``: its record,
    ``{"job": KEY, …}``; another job's ``out_dir`` is refused), else an :class:`OutDir`."""
    path = Path(out_dir)
    check_apart(path, [read for read in reads if read])
    if path.exists() and not path.is_dir():
        raise ConfigError(f"out_dir={path} is a file")
    if path.is_dir() and any(path.iterdir()):
        held = kind_held(path)
        if held is None:
            raise ConfigError(f"out_dir={path} is not empty and holds no {kind.mark}: choose a new or empty directory")
        if held is not kind:
            raise ConfigError(f"out_dir={path} holds {held.holds} ({held.mark}): choose a new out_dir; {kind.rule}")
        if kind is SHARDED:
            check_same_job(path, job)
    check_writable(path)
    if kind is not SHARDED:
        return OutDir(path)
    assert job is not None, "a sharded apply's out_dir is opened with its job"
    try:
        (path / SHARDS).mkdir(parents=True, exist_ok=True)
        (path / DONE).mkdir(exist_ok=True)
        write_text(path / JOB, record_text(dict(job)) + "\n")
    except OSError as err:
        raise ConfigError(f"out_dir={path}: cannot write there ({err.strerror or err})") from None
    return Job(path, job["job"])


def check_same_job(path: Path, job: Mapping[str, Any] | None) -> None:
    """Refuse a sharded apply's ``out_dir`` whose ``job.json`` is not ``job``'s (another tuned rescorer)."""
    try:
        recorded = record_value((path / JOB).read_text(encoding="utf-8"))["job"]
    except (OSError, ValueError, KeyError, TypeError):
        recorded = None
    if job is None or recorded != job["job"]:
        raise ConfigError(f"out_dir={path} holds shards re-ranked by another tuned rescorer (or other weights, or "
                          "another every or top): "
                          "choose a new out_dir, or remove it to start again")


def check_writable(path: Path) -> None:
    """Refuse an ``out_dir`` whose nearest existing folder is a file or may not be written."""
    there = next(p for p in (path, *path.parents) if p.exists() or p == p.parent)
    if not there.is_dir() or not os.access(there, os.W_OK | os.X_OK):
        why = f"{there} is a file" if there.exists() and not there.is_dir() else f"{there} is not writable"
        raise ConfigError(f"out_dir={path}: cannot write there ({why})")


def check_apart(out_dir: Path, inputs: Iterable[str | Path]) -> None:
    """Refuse an ``out_dir`` that is, holds or lies inside any of ``inputs`` (what the run reads), or that a glob
    among them could match, itself or what it will hold (the next run would read the outputs as inputs)."""
    where = real(out_dir)
    for path in inputs:
        if glob.has_magic(os.fspath(path)) and globbed(where, Path(os.path.abspath(path))):
            raise ConfigError(f"out_dir={out_dir} lies where {path}, which this run reads, matches: the next run "
                              "would read the outputs as inputs, so choose an out_dir outside it")
        read = real(path)
        relation = ("is" if read == where else "holds" if where in read.parents else
                    "is inside" if read in where.parents else None)
        if relation:
            raise ConfigError(f"out_dir={out_dir} {relation} {path}, which this run reads: a run writes over its "
                              "out_dir, so choose another one")


def globbed(out_dir: Path, pattern: Path) -> bool:
    """Whether ``pattern`` (absolute) matches ``out_dir``, a folder holding it or the start of a path inside it."""
    return all(map(fnmatch.fnmatchcase, out_dir.parts, pattern.parts))  # as far as the shorter of the two goes


@dataclass(frozen=True)
class RunDir:
    """Where a run writes (``work``, a hidden sibling of ``final``) and where its outputs will be."""

    work: Path
    final: Path

    def path(self, *parts: str) -> Path:
        """``work/parts…``, refused unless it stays inside ``work``."""
        path = self.work.joinpath(*parts)
        if real(self.work) not in real(path).parents:
            raise ConfigError(f"{self.final.joinpath(*parts)} is outside out_dir={self.final}: nothing is written "
                              "there")
        return path

    def shown(self, path: Path) -> str:
        """``path`` (under ``work``) as it will be once the run is in place."""
        return str(self.final / Path(path).relative_to(self.work))

    def restated(self, err: NBestFormatError) -> NBestFormatError:
        """``err`` naming the paths it names under ``work`` where they will be, not in the staging directory."""
        work, final = str(self.work), str(self.final)
        return type(err)(err.path.replace(work, final), err.line, err.problem.replace(work, final), err.value)


@contextlib.contextmanager
def run_dir(out: OutDir) -> Iterator[RunDir]:
    """Stage a run's outputs; they replace the checked ``out_dir`` together when the block succeeds, else vanish, so
    a reused ``out_dir`` never mixes runs — or when standard output was closed by its reader once they were all
    written (``report.json`` is written last, before the table is shown): the error goes on, for the command line to
    end quietly. Errors name where the outputs would have been."""
    closed = None
    try:
        with atomic_dir(out.path) as work:
            staged = RunDir(work, out.path)
            try:
                yield staged
            except NBestFormatError as err:
                raise staged.restated(err) from None
            except BrokenPipeError as err:
                if not (work / MARK).is_file():
                    raise
                closed = err
    except BrokenPipeError:
        raise
    except OSError as err:
        if err.errno == errno.ENAMETOOLONG:
            name = Path(err.filename or "").name
            raise ConfigError(f"out_dir={out.path}: cannot write {name[:60]}…: the file name is too long "
                              "(shorten the set name or the input's file name)") from None
        raise ConfigError(f"out_dir={out.path}: cannot write there ({err.strerror or err})") from None
    if closed is not None:
        raise closed
