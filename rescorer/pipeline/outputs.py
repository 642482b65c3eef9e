"""What a run writes: each set in its own format and as canonical JSONL, the 1-best text, the report —
all into a staging directory that replaces ``out_dir`` only when the whole run succeeded."""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

from ..engine import BoundScorer
from ..errors import ConfigError, NBestFormatError
from ..files import atomic_dir, copy_file, write_lines, write_text
from ..io import CANONICAL, REGISTRY, write_nbest
from ..io.formats import facts
from ..io.common import id_lines, text_lines
from ..io.jsonformats import jsonl_lines
from ..io.sets import check_set_names
from ..io.target import check_line_ids
from ..types import NBest, Utterance

MARK = "report.json"  # what makes a directory a rescorer run's output (and so replaceable)
RUN_FILES = (MARK, "report.md", "report.html", "tuned.yaml")  # a run's own files beside the sets (and weights_*.png)
ONE_BEST = "1best.txt"
SET_FILES = (ONE_BEST, *(fmt.one_best for fmt in REGISTRY.values() if fmt.one_best))  # a set's 1-best files


@dataclass(frozen=True)
class OutDir:
    """An ``out_dir`` a run may replace (:func:`out_dir_for`): new, empty or an earlier run's, holding no input."""

    path: Path


def real(path: str | Path) -> Path:
    """``path`` absolute with every symlink resolved (as far as it exists)."""
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError):  # a symlink loop: compare it as written
        return Path(os.path.abspath(path))


def out_dir_for(out_dir: str | Path, inputs: Iterable[str | Path]) -> OutDir:
    """``out_dir`` checked before a run starts: not a file, not a directory of something other than a rescorer run,
    and neither holding, inside nor equal to any of ``inputs`` (what the run reads: lists, references, a tuned
    rescorer, the score store), which replacing it would delete."""
    final = Path(out_dir)
    check_apart(final, inputs)
    if final.exists() and not final.is_dir():
        raise ConfigError(f"out_dir={final} is a file")
    if final.is_dir() and any(final.iterdir()) and not (final / MARK).is_file():
        raise ConfigError(f"out_dir={final} is not empty and holds no {MARK}: choose a new or empty directory")
    return OutDir(final)


def check_apart(out_dir: Path, inputs: Iterable[str | Path]) -> None:
    """Refuse an ``out_dir`` that is, holds or lies inside any of ``inputs`` (what the run reads)."""
    where = real(out_dir)
    for path in inputs:
        read = real(path)
        relation = ("is" if read == where else "holds" if where in read.parents else
                    "is inside" if read in where.parents else None)
        if relation:
            raise ConfigError(f"out_dir={out_dir} {relation} {path}, which this run reads: a run writes over its "
                              "out_dir, so choose another one")


def checked_out_dir(out_dir: str | Path | OutDir | None, sets: Mapping[str, NBest],
                    scorers: Mapping[str, BoundScorer], inputs: Iterable[str | Path | None] = ()) -> OutDir | None:
    """None without ``out_dir``; one checked already as it is; else ``out_dir`` checked for a run that writes ``sets``
    (plain names only) and reads their files, the score store of ``scorers`` and ``inputs`` (a tuned rescorer, the
    configured store: check before a scorer opens it)."""
    if out_dir is None or isinstance(out_dir, OutDir):
        return out_dir
    check_set_names(sets)
    check_output_names(sets)
    stores = [scorer.store_path for scorer in scorers.values() if scorer.store_path is not None]
    files = [path for nbest in sets.values() for path in nbest.inputs if os.path.lexists(path)]  # not "generate"
    read = [*files, *stores, *inputs]
    return out_dir_for(out_dir, [path for path in read if path])


def check_output_names(names: Iterable[str]) -> None:
    """Before any work: refuse sets whose outputs (``NAME/`` and ``NAME.jsonl``) would land on each other's or on
    the run's own files (``report.json``, ``tuned.yaml``, ``weights_*.png``, …)."""
    taken: dict[str, str] = {name: "the run itself" for name in RUN_FILES}
    for name in names:
        for written in (name, f"{name}.jsonl"):
            owner = taken.get(written) or ("the run's weight plots" if written.startswith("weights_")
                                           and written.endswith(".png") else None)
            if owner:
                raise ConfigError(f"set {name!r} would write {written} in out_dir, where {owner} writes too: "
                                  "rename the set")
            taken[written] = f"set {name!r}"


@dataclass(frozen=True)
class RunDir:
    """Where a run writes (``work``, a hidden sibling of ``final``) and where its outputs will be."""

    work: Path
    final: Path

    def path(self, *parts: str) -> Path:
        """``work/parts…``, refused unless it stays inside ``work``."""
        path = self.work.joinpath(*parts)
        if real(self.work) not in real(path).parents:
            raise ConfigError(f"{self.final.joinpath(*parts)} is outside out_dir={self.final}: nothing is written there")
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
    a reused ``out_dir`` never mixes runs. Errors name where the outputs would have been."""
    try:
        with atomic_dir(out.path) as work:
            staged = RunDir(work, out.path)
            try:
                yield staged
            except NBestFormatError as err:
                raise staged.restated(err) from None
    except OSError as err:
        raise ConfigError(f"out_dir={out.path}: cannot write there ({err.strerror or err})") from None



def write_scored(nbest: NBest, out: RunDir | Path, name: str,
                 utterances: Iterable[Utterance] | None = None) -> dict[str, Path]:
    """The set in its own format (``out_dir/name/``) and as canonical JSONL (``out_dir/name.jsonl``), never outside
    ``out`` (a run's staging directory, or a plain directory). ``utterances`` (a canonical JSONL set only): others in
    place of its own (its utterances re-ranked), made as they are written, so the set is never whole in memory."""
    out = out if isinstance(out, RunDir) else RunDir(Path(out), Path(out))
    source = Path(nbest.source)
    named = source.name or f"nbest.{nbest.fmt}"
    native = out.path(name, "nbest" if facts(nbest.fmt).directory else
                      f"nbest-{named}" if named in SET_FILES else named)  # never over a 1-best file beside it
    jsonl = out.path(f"{name}.jsonl")
    if utterances is not None and nbest.fmt != CANONICAL:
        raise ValueError(f"utterances are streamed into canonical JSONL only, not {nbest.fmt}")
    if utterances is None:
        write_nbest(nbest, native)
    else:
        write_lines(native, jsonl_lines(nbest, utterances))  # canonical JSONL holds any list: nothing to refuse
    if nbest.fmt == CANONICAL:  # the same bytes: written once, copied
        copy_file(native, jsonl)
    else:
        write_nbest(nbest, jsonl, CANONICAL)
    return {"native": native, CANONICAL: jsonl}  # the keys of report.json's outputs


def write_1best(nbest: NBest, path: Path, with_ids: bool, best: Sequence[str] | None = None) -> None:
    """The 1-best text: ``id text`` lines (Kaldi ``text``) for ASR, plain lines in order for MT (``best``: other
    texts, one per utterance, in place of its first hypotheses)."""
    best = nbest.select([0] * len(nbest)) if best is None else best
    if with_ids:
        check_line_ids(nbest, path)
    body = id_lines(((u.id, text) for u, text in zip(nbest, best)), path) if with_ids else text_lines(best, path)
    write_text(path, body)


def write_toolkit_1best(nbest: NBest, directory: Path) -> Path | None:
    """The 1-best in the file its toolkit's own scoring reads (ESPnet/Kaldi ``text``: ``id words``; fairseq
    ``generate-1best.txt``: the format itself, cut to the best hypothesis); None where ``1best.txt`` is it."""
    fmt = facts(nbest.fmt)
    if not fmt.one_best:
        return None
    path = directory / fmt.one_best
    if fmt.one_best_ids:
        write_1best(nbest, path, with_ids=True)
    else:
        write_nbest(nbest.with_utterances([replace(u, hyps=u.hyps[:1]) for u in nbest]), path)
    return path
