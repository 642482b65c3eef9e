"""N-best lists converted to another format (canonical JSONL by default), each cut to its best ``top`` hypotheses,
every ``every``-th utterance kept and split into ``shards``: read and written block by block by the readers and
writers every apply uses, all into a new ``out_dir`` put in place whole (``task=convert``). Inputs are never
written."""
from __future__ import annotations

import math
import os
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import chain, groupby
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from ..errors import ConfigError, check_known
from ..files import record_text, write_text
from . import REGISTRY, block_writer
from .formats import facts
from .sets import SUBSET, NBestSet
from ..log import info
from ..options import TEXT, Option, checked
from ..safetext import visible
from ..types import CANONICAL, NBest
from .inputs import KEY, named_inputs, named_paths
from ..outdir import CONVERT, CONVERTED, RunDir, open_out_dir, run_dir

MAX_SHARDS = 99_999  # the five digits of a shard's number
OPTIONS = {"fmt": TEXT, "to": TEXT, "top": SUBSET["top"], "every": SUBSET["every"],
           "shards": Option("integer", low=1, high=MAX_SHARDS)}


@dataclass(frozen=True)
class Conversion:
    """What a convert writes of each input: in format ``to`` (read as ``fmt``; ``auto``: detected), every
    ``every``-th utterance, each cut to its best ``top`` hypotheses, split into ``shards`` of about equal utterance
    counts. ``where`` names the options in errors (``task.``)."""

    fmt: str = "auto"
    to: str = CANONICAL
    top: int | None = None
    every: int = 1
    shards: int = 1
    where: str = field(default="", compare=False)

    @classmethod
    def of(cls, values: Mapping[str, Any], where: str = "") -> "Conversion":
        """The options among ``values`` (other keys are not read), each checked; errors name ``where`` + key."""
        given = {key: value for key, value in checked(where, values, OPTIONS).items() if key in OPTIONS}
        check_known(f"{where}fmt", [given.get("fmt", "auto")], ["auto", *REGISTRY])
        check_known(f"{where}to", [given.get("to", CANONICAL)], REGISTRY)
        return cls(**given, where=where)

    def output_name(self, name: str, source: Path, shard: int) -> str:
        """The name of shard ``shard`` (from 0) of input ``source`` (output name ``name``): the name without the
        input file's suffix and with the format's (``nbest.txt`` → ``nbest.jsonl``); with shards, numbered as
        Hugging Face datasets numbers them (``nbest-00000-of-00004.jsonl``)."""
        stem = Path(name).stem if source.is_file() and Path(name).suffix else name
        numbered = f"-{shard:05d}-of-{self.shards:05d}" if self.shards > 1 else ""
        return f"{stem}{numbered}{facts(self.to).suffix}"


def convert(inputs: str | os.PathLike | Sequence[str | os.PathLike], out_dir: str | os.PathLike, *,
            fmt: str = "auto", to: str = CANONICAL, top: int | None = None, every: int = 1,
            shards: int = 1) -> dict[str, Any]:
    """Convert N-best lists to format ``to`` (default canonical JSONL) into a new ``out_dir``.

    :param inputs: an N-best file, a directory, a glob, ``@LIST`` or a list of these, named as
        :func:`rescorer.apply`'s (:func:`~rescorer.io.inputs.named_inputs`); each is written as its own
        output(s) in ``out_dir``.
    :param fmt: the inputs' format (``auto``: detected).
    :param top: each list cut to its best ``top`` hypotheses (None: all).
    :param every: every ``every``-th utterance kept (1: all).
    :param shards: each input split into this many files of about equal utterance counts (an utterance whole),
        ``NAME-00000-of-0000N.EXT``.
    :returns: what was written (also ``out_dir/.converted.json``): each output's input, utterances and hypotheses.
    """
    options = Conversion.of({"fmt": fmt, "to": to, "top": top, "every": every, "shards": shards})
    return write_converted(inputs, out_dir, options)


def write_converted(inputs: str | os.PathLike | Sequence[str | os.PathLike], out_dir: str | os.PathLike,
                    options: Conversion) -> dict[str, Any]:
    """Each input (:func:`~rescorer.io.inputs.named_inputs`) converted as ``options`` say into ``out_dir``,
    which is put in place only when every output is written; the summary, in one line and in
    ``out_dir/.converted.json``."""
    named = named_inputs(inputs)
    names = {path: [options.output_name(name, path, k) for k in range(options.shards)] for path, name in named.items()}
    check_names(names)
    target = open_out_dir(out_dir, [*named, *named_paths(inputs)], CONVERT)
    outputs: dict[str, dict[str, Any]] = {}
    with run_dir(target) as out:
        for path, shard_names in names.items():
            outputs.update(convert_one(path, shard_names, out, options))
        summary = {"task": "convert", "to": options.to, "top": options.top, "every": options.every,
                   "shards": options.shards, "outputs": outputs}
        write_text(out.work / CONVERTED, record_text(summary, indent=1) + "\n")
    utterances = sum(o["utterances"] for o in outputs.values())
    hypotheses = sum(o["hypotheses"] for o in outputs.values())
    info(f"converted {len(named)} list(s) to {options.to}: {utterances:,} utterances, {hypotheses:,} hypotheses in "
         f"{len(outputs)} file(s) in {visible(str(target.path))}")
    return summary


def check_names(names: Mapping[Path, list[str]]) -> None:
    """Refuse two inputs whose outputs would have one name (``a.txt`` and ``a.jsonl`` both as ``a.jsonl``)."""
    seen: dict[str, Path] = {}
    for path, shard_names in names.items():
        for name in shard_names:
            if name in seen:
                raise ConfigError(f"{KEY}: {visible(str(seen[name]))} and {visible(str(path))} would both be written "
                                  f"as out_dir/{visible(name)}: rename one")
            seen[name] = path


def convert_one(path: Path, names: list[str], out: RunDir, options: Conversion) -> dict[str, dict[str, Any]]:
    """One input written as ``names`` (one a shard): its utterances split at about equal counts, one block in
    memory at a time (an input split into shards is read twice: once to count its utterances)."""
    source = NBestSet(str(path), fmt=options.fmt, every=options.every, top=options.top,
                      where=f"{options.where}inputs: {path}: ")
    if len(names) > 1:
        count = sum(len(block) for block in source.blocks())
        if count < len(names):
            raise ConfigError(f"{options.where}shards={len(names)} is more than the {count} utterances kept of "
                              f"{visible(str(path))}: choose at most {count}")
        bounds = [count * k // len(names) for k in range(len(names) + 1)]
    else:
        bounds = [0, math.inf]
    blocks = source.blocks()
    first = next(blocks)
    like = first.with_utterances(())
    written = {}
    for shard, pieces in groupby(split(chain([first], blocks), bounds), key=lambda pair: pair[0]):
        utterances = hypotheses = 0
        with block_writer(out.path(names[shard]), like, options.to) as write:
            for _, piece in pieces:
                write(piece)
                utterances += len(piece)
                hypotheses += piece.num_hypotheses
        written[names[shard]] = {"input": str(path), "utterances": utterances, "hypotheses": hypotheses}
    return written


def split(blocks: Iterable[NBest], bounds: Sequence[float]) -> Iterator[tuple[int, NBest]]:
    """The utterances of ``blocks`` in pieces, each with its shard: shard ``k`` holds utterances
    ``[bounds[k], bounds[k + 1])`` in order."""
    position = 0
    for block in blocks:
        start = 0
        while start < len(block):
            shard = bisect_right(bounds, position) - 1
            end = int(min(len(block), start + bounds[shard + 1] - position))
            yield shard, block.with_utterances(block.utterances[start:end])
            position += end - start
            start = end
