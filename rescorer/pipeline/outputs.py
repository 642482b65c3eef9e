"""What a run writes: each set in its own format and as canonical JSONL, the 1-best text, the report —
all into a staging directory that replaces ``out_dir`` only when the whole run succeeded."""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Iterator, Mapping

from ..engine import BoundScorer
from ..errors import ConfigError
from ..files import NAME_LENGTH, atomic_file, copy_file
from ..io import CANONICAL, REGISTRY, block_writer, write_nbest
from ..io.formats import facts
from ..io.common import id_lines, text_lines
from ..io.sets import check_set_names
from ..io.target import check_line_ids
from ..types import NBest
from .applying import Applied, Summary
from .stream import EXAMPLES, Output
from ..outdir import MARK, OutDir, RunDir, open_out_dir, run_dir

RUN_FILES = (MARK, "report.md", "report.html", "tuned.yaml")  # a run's own files beside the sets (and weights_*.png)
ONE_BEST = "1best.txt"
SET_FILES = (ONE_BEST, *(fmt.one_best for fmt in REGISTRY.values() if fmt.one_best))  # a set's 1-best files


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
    return open_out_dir(out_dir, read)


def check_output_names(names: Iterable[str]) -> None:
    """Before any work: refuse sets whose outputs (``NAME/`` and ``NAME.jsonl``) would land on each other's or on
    the run's own files (``report.json``, ``tuned.yaml``, ``weights_*.png``, …), or be too long a file name."""
    taken: dict[str, str] = {name: "the run itself" for name in RUN_FILES}
    longest = NAME_LENGTH - len(".jsonl")
    for name in names:
        if len(name) > longest:
            raise ConfigError(f"set name {name[:40]!r}… is {len(name)} characters, too long for the file names of "
                              f"its outputs in out_dir (at most {longest}): shorten the set name")
        for written in (name, f"{name}.jsonl"):
            owner = taken.get(written) or ("the run's weight plots" if written.startswith("weights_")
                                           and written.endswith(".png") else None)
            if owner:
                raise ConfigError(f"set {name!r} would write {written} in out_dir, where {owner} writes too: "
                                  "rename the set")
            taken[written] = f"set {name!r}"


def native_path(out: RunDir, name: str, like: NBest) -> Path:
    """Where set ``name`` is written in its own format: ``NAME/nbest`` for a directory format, else ``NAME/`` and
    the file name it was read from (never over a 1-best file beside it)."""
    named = Path(like.source).name or f"nbest.{like.fmt}"
    return out.path(name, "nbest" if facts(like.fmt).directory else
                    f"nbest-{named}" if named in SET_FILES else named)


def write_scored(nbest: NBest, out: RunDir | Path, name: str) -> dict[str, Path]:
    """The set in its own format (``out_dir/name/``) and as canonical JSONL (``out_dir/name.jsonl``), never outside
    ``out`` (a run's staging directory, or a plain directory)."""
    out = out if isinstance(out, RunDir) else RunDir(Path(out), Path(out))
    native, jsonl = native_path(out, name, nbest), out.path(f"{name}.jsonl")
    write_nbest(nbest, native)
    if nbest.fmt == CANONICAL:  # the same bytes: written once, copied
        copy_file(native, jsonl)
    else:
        write_nbest(nbest, jsonl, CANONICAL)
    return {"native": native, CANONICAL: jsonl}  # the keys of report.json's outputs


@contextlib.contextmanager
def set_outputs(out: RunDir, name: str, like: NBest, with_ids: bool) -> Iterator[tuple[Output, dict[str, Path]]]:
    """What a re-ranked set is written as, each file written piece by piece as the pieces come and put in place
    when the context ends: the set in its own format (:func:`native_path`), as canonical JSONL (``NAME.jsonl``),
    its 1-best text (``NAME/1best.txt``, ``id text`` lines with ``with_ids``) and its toolkit's own 1-best file; and
    where each is (the keys of report.json's outputs)."""
    written = {"native": native_path(out, name, like), CANONICAL: out.path(f"{name}.jsonl"),
               "1best": out.path(name, ONE_BEST)}
    toolkit = facts(like.fmt).one_best
    if toolkit:
        written["toolkit_1best"] = out.path(name, toolkit)
    with contextlib.ExitStack() as stack:
        writers = [stack.enter_context(block_writer(written[CANONICAL], like, CANONICAL)),
                   stack.enter_context(one_best_writer(written["1best"], with_ids))]
        if like.fmt != CANONICAL:
            writers.append(stack.enter_context(block_writer(written["native"], like)))
        if toolkit and facts(like.fmt).one_best_ids:
            writers.append(stack.enter_context(one_best_writer(written["toolkit_1best"], True)))
        elif toolkit:
            cut = stack.enter_context(block_writer(written["toolkit_1best"], like))
            writers.append(lambda piece: cut(piece.with_utterances([replace(u, hyps=u.hyps[:1]) for u in piece])))
        yield (lambda piece: [write(piece) for write in writers]), written
    if like.fmt == CANONICAL:  # the same bytes: written once, copied
        copy_file(written[CANONICAL], written["native"])


@dataclass
class SetPlace:
    """Where a run's sets go: staged in ``out_dir`` (None: nothing is written) and put in place whole when the run
    succeeds, each set written as :func:`set_outputs` writes it (``with_ids``: its 1-best as ``id text`` lines) and
    judged against its references; a set without utterances is refused."""

    out_dir: OutDir | None
    with_ids: bool
    checks_depth: bool = True
    kind: str = "set"
    examples: int = EXAMPLES
    judge: bool = True
    out: RunDir | None = field(default=None, init=False)

    @contextlib.contextmanager
    def opened(self) -> Iterator[RunDir | None]:
        if self.out_dir is None:
            yield None
            return
        with run_dir(self.out_dir) as self.out:
            yield self.out

    def kept(self, name: str) -> None:
        return None

    @contextlib.contextmanager
    def outputs(self, name: str, like: NBest) -> Iterator[tuple[list[Output], dict[str, str]]]:
        if self.out is None:
            yield [], {}
            return
        with set_outputs(self.out, name, like, self.with_ids) as (write, paths):
            yield [write], {kind: self.out.shown(path) for kind, path in paths.items()}

    def done(self, name: str, applied: Applied) -> None:
        if not applied.entry.utterances:
            raise ConfigError(f"set {name!r} has no utterances (check the file and every/start/stop/top)")

    def summary(self, applied: Mapping[str, Applied]) -> Summary:
        return Summary()


@contextlib.contextmanager
def one_best_writer(path: Path, with_ids: bool) -> Iterator[Output]:
    """A writer of the 1-best text of each piece (its first hypotheses): ``id text`` lines (Kaldi ``text``) with
    ``with_ids``, else plain lines in order; in place when the context ends."""
    with atomic_file(path) as tmp, tmp.open("w", encoding="utf-8") as out:
        lines = 0

        def write(piece: NBest) -> None:
            nonlocal lines
            best = piece.select([0] * len(piece))
            if with_ids:
                check_line_ids(piece, path)
            out.write(id_lines(((u.id, text) for u, text in zip(piece, best)), path, lines + 1) if with_ids
                      else text_lines(best, path, lines + 1))
            lines += len(piece)
        yield write


def write_1best(nbest: NBest, path: Path, with_ids: bool) -> None:
    """The 1-best text of ``nbest``: ``id text`` lines (Kaldi ``text``) with ``with_ids`` (ASR), plain lines in
    order without (MT)."""
    with one_best_writer(path, with_ids) as write:
        write(nbest)
