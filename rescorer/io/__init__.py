"""Read and write N-best lists of real toolkits; ``fmt="auto"`` detects the format."""
from __future__ import annotations

import contextlib
import math
from collections import ChainMap
from pathlib import Path
from typing import Callable, Iterable, Iterator

from ..bulk import paused_gc
from ..errors import ConfigError, NBestFormatError, check_known
from ..options import PATH, TEXT, Option, checked, keywords
from ..types import CANONICAL, Hypothesis, NBest, Utterance
from .generate import nbest_from_generate
from .refs import attach_refs, read_refs
from .format import Format, Sample
from .formats import REGISTRY, detectable, facts, format_of, register, whole
from .seen import Seen
from .target import check_writable

FORMATS = detectable()  # what fmt=auto can find among the shipped formats
FORMAT = Option("text", choices=ChainMap(REGISTRY, {"auto": None}).keys())  # a format's name (registered later too)
READ = {"path": PATH, "fmt": TEXT, "refs": Option("path", null=True), "refs_fmt": TEXT}
WRITE = {"path": PATH, "fmt": Option("text", null=True), "score_column": Option("text", null=True)}


def metric_for(name: str, formats: Iterable[str]) -> str:
    """The metric ``name``, or for ``auto`` the one the lists' ``formats`` call for: BLEU if any is an MT format,
    else WER."""
    if name != "auto":
        return name
    return "bleu" if any(facts(fmt).translation for fmt in formats) else "wer"


def metric_defaults(name: str, formats: Iterable[str]) -> dict[str, object]:
    """The options metric ``name`` takes by default for lists of ``formats`` (BLEU of Moses output: lower-cased)."""
    return {k: v for fmt in formats for k, v in facts(fmt).bleu_defaults} if name == "bleu" else {}


def detect_format(path: str | Path) -> str:
    """Guess the format of ``path`` from its layout and first lines: the first format in the registry whose
    ``detect`` says yes (asked of a :class:`~rescorer.io.format.Sample` of the path, which reads each part once)."""
    path = Path(path)
    sample = Sample(path, path.is_dir())
    for fmt in REGISTRY.values():
        if fmt.detect is not None and fmt.directory == sample.is_dir and fmt.detect(sample):
            return fmt.name
    if sample.is_dir:
        raise NBestFormatError(path, None, "unknown N-best directory layout (expected <n>best_recog/ or words_text)")
    raise NBestFormatError(path, 1, f"unknown N-best format (known: {', '.join(detectable())})", sample.first)


@paused_gc()
def read_nbest(path: str | Path, fmt: str = "auto", refs: str | Path | None = None,
               refs_fmt: str = "auto", **options) -> NBest:
    """Read an N-best list, and attach references.

    :param path: the list: a file or a decode directory (ESPnet, Kaldi).
    :param fmt: its format (``auto``: detected from the layout and the first lines; :data:`FORMATS` lists them).
    :param refs: references to attach (.trn, Kaldi text, a manifest or one line per utterance), by id where they
        have ids.
    :param refs_fmt: their format (``auto``: detected).
    :param options: the reader's own options (field names of JSON/CSV lists, …); an unknown one is refused.
    :returns: the :class:`NBest`: utterances in file order, hypotheses best first, each with its score columns.
    :raises rescorer.NBestFormatError: naming the file and line of what cannot be read.

    Example::

        import rescorer

        nbest = rescorer.read_nbest("recipes/demo/data/test_clean", refs="recipes/demo/data/test_clean/ref.trn")
        print(nbest, rescorer.wer(nbest.refs(), nbest.select([0] * len(nbest))))  # NBest(fmt='espnet2', …) 1.37…
    """
    checked("", {"path": path, "fmt": fmt, "refs": refs, "refs_fmt": refs_fmt}, READ)
    fmt = detect_format(path) if fmt == "auto" else fmt
    if fmt == "nemo" and refs is not None and "manifest" not in options and "beam_size" not in options:
        options["manifest"] = refs
    blocks = read_blocks(path, fmt, **options)
    first = next(blocks)
    nbest = first.with_utterances([u for block in (first, *blocks) for u in block.utterances])
    if not nbest.utterances:
        raise NBestFormatError(path, None, "no utterances found")
    if refs is not None:
        nbest = attach_refs(nbest, refs, refs_fmt)
    return nbest


def read_blocks(path: str | Path, fmt: str = "auto", size: int = 0, **options) -> Iterator[NBest]:
    """An N-best list as blocks of whole utterances in file order, ``size`` each (0: as its reader reads them; the last
    may be smaller): what :func:`read_nbest` joins; see it for ``fmt`` and ``options``. There is at least one block."""
    if fmt == "auto":
        fmt = detect_format(path)
    record = format_of(fmt, path)
    named, open_ended = keywords(record.blocks)
    if not open_ended:
        check_known(f"{fmt} reader option", options, named - {"path", "size"})
    return record.blocks(path, size=size, **options)


RANK = "rank"  # the column a list without scores gets from its order


def with_rank(nbest: NBest) -> NBest:
    """``nbest`` itself, or, where it carries no score at all (saved beam outputs, another system's lists), a copy
    whose order is its one column: ``rank`` = −ln(1 + position), 0 for the first hypothesis, −0.69 for the second,
    …; it ranks them as given and serves as the base that LM scores re-rank."""
    if any(h.scores for u in nbest for h in u.hyps) or not nbest.num_hypotheses:
        return nbest
    return nbest.with_columns({RANK: [0.0 - math.log1p(k) for u in nbest for k in range(len(u.hyps))]})


def natural_base(nbest: NBest) -> str:
    """The column ``nbest``'s format ranks by (ESPnet and fairseq ``score``, Moses/Marian ``total``, HyPoradise
    ``am_score`` or ``score``), else its only column; refused with the columns it has when neither is there."""
    columns = nbest.columns
    base = facts(nbest.fmt).base
    found = [c for c in base if c in columns]
    if found or len(columns) == 1:
        return (found or columns)[0]
    raise ConfigError(f"{nbest.source}: no base column to add LM scores to ({nbest.fmt} lists rank by "
                      f"{' or '.join(base) or 'no single column'}); name one with "
                      f"task.base.name=… (columns: {', '.join(columns) or 'none'})")


def write_nbest(nbest: NBest, path: str | Path, fmt: str | None = None, score_column: str | None = None,
                **options) -> None:
    """Write ``nbest`` in ``fmt`` (default: the format it was read from), atomically.

    What each format keeps is in ``rescorer/io/target.py``; ``score_column`` names the column written as
    the overall score of a format that has one (default ``score``, else ``total``).
    """
    check_nbest(nbest)
    checked("", {"path": path, "fmt": fmt, "score_column": score_column}, WRITE)
    fmt = fmt or nbest.fmt
    record = format_of(fmt, path)
    if score_column is not None:
        if record.all_columns:
            raise ConfigError(f"score_column is for formats with one overall score; {fmt} keeps every column by name")
        options["score_column"] = score_column
    check_writable(nbest, record, path)
    record.write(nbest, path, **options)


@contextlib.contextmanager
def block_writer(path: str | Path, like: NBest, fmt: str | None = None,
                 score_column: str | None = None) -> Iterator[Callable[[NBest], None]]:
    """A function that writes a list block by block into ``path`` in ``fmt`` (default: ``like``'s), the file in
    place when the context ends: as the blocks come where the format has a block writer (each block checked as
    :func:`write_nbest` checks a list, ids across blocks included), else gathered and written whole by
    :func:`write_nbest`."""
    record = format_of(fmt or like.fmt, path)
    if record.writer is None or (score_column is not None and record.all_columns):
        blocks: list[NBest] = []
        yield blocks.append
        write_nbest(like.with_utterances([u for block in blocks for u in block.utterances]), path, fmt, score_column)
        return
    seen = Seen()
    options = {} if score_column is None else {"score_column": score_column}
    with record.writer(path, like, **options) as write:
        def write_checked(block: NBest) -> None:
            check_writable(check_nbest(block), record, path, seen)
            write(block)
        yield write_checked


def check_nbest(nbest: object, what: str = "nbest") -> NBest:
    """``nbest`` itself if it is an NBest whose utterances are Utterance objects with distinct ids and Hypothesis
    lists; else a :class:`ConfigError` naming ``what`` (for an NBest built by hand)."""
    if not isinstance(nbest, NBest):
        raise ConfigError(f"{what} must be an NBest (rescorer.read_nbest gives one), not {type(nbest).__name__}")
    seen: set[str] = set()
    for k, utt in enumerate(nbest.utterances):
        if not isinstance(utt, Utterance):
            raise ConfigError(f"{what}.utterances[{k}] must be an Utterance, not {type(utt).__name__}")
        if utt.id in seen:
            raise ConfigError(f"{what}: utterance id {utt.id!r} appears twice (ids must be distinct)")
        seen.add(utt.id)
    if not all(isinstance(h, Hypothesis) for u in nbest.utterances for h in u.hyps):
        utt, wrong = next((u, h) for u in nbest.utterances for h in u.hyps if not isinstance(h, Hypothesis))
        raise ConfigError(f"{what}: utterance {utt.id!r} has a hypothesis that is a {type(wrong).__name__}, "
                          "not a Hypothesis")
    return nbest


__all__ = ["CANONICAL", "FORMAT", "FORMATS", "REGISTRY", "Format", "RANK", "Sample", "attach_refs", "check_nbest",
           "detect_format", "metric_defaults", "metric_for", "natural_base", "nbest_from_generate", "read_nbest",
           "read_refs", "read_blocks", "register", "whole", "with_rank", "write_nbest", "block_writer"]
