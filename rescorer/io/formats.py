"""Every N-best format rescorer reads and writes, one :class:`~rescorer.io.format.Format` record each: adding a
toolkit is one reader/writer module and one entry here (or a :func:`register` call)."""
from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Callable, Iterator

from ..errors import NBestFormatError
from ..types import NBest
from .espnet import (detect_espnet1, detect_espnet2, espnet2_blocks, espnet2_writer, read_espnet1, write_espnet1,
                     write_espnet2)
from .fairseq import (blocks as fairseq_blocks, detect as detect_fairseq, write as write_fairseq,
                      writer as fairseq_writer)
from .jsonformats import (detect_jsonl, detect_mlm_scoring, detect_sockeye, jsonl_blocks, jsonl_writer, read_mlm_scoring,
                          sockeye_blocks, sockeye_writer, write_jsonl, write_mlm_scoring, write_sockeye)
from .kaldi import detect as detect_kaldi, kaldi_blocks, write as write_kaldi, writer as kaldi_writer
from .moses import (blocks as moses_blocks, detect as detect_moses, detect_marian, write as write_moses,
                    writer as moses_writer)
from .nemo import blocks as nemo_blocks, detect as detect_nemo, write as write_nemo, writer as nemo_writer
from .records import detect_hyporadise, fields_blocks, hyporadise_blocks
from .recordwrite import fields_writer, hyporadise_writer, write_fields, write_hyporadise
from .common import LINE_BREAKS, line_id_problem
from .format import Format

_LABEL_CHARS = re.compile(r"[\s=:|]")


def whole(read: Callable[..., NBest]) -> Callable[..., Iterator[NBest]]:
    """The block reader of a format read whole: the list ``read`` gives, cut into blocks."""
    @functools.wraps(read)
    def blocks(path: str | Path, size: int = 0, **options: object) -> Iterator[NBest]:
        nbest = read(path, **options)
        step = size or max(len(nbest), 1)
        for start in range(0, max(len(nbest), 1), step):
            yield nbest.with_utterances(nbest.utterances[start : start + step])
    return blocks


def integer_id(pattern: str, rule: str):
    """An id rule: the id must match ``pattern`` (``rule`` says it in words)."""
    regex = re.compile(pattern)

    def problem(utt_id: str, fmt: str) -> str | None:
        return None if regex.fullmatch(utt_id) else f"sentence id must be {rule} to be written as {fmt}"
    return problem


def line_id(utt_id: str, fmt: str) -> str | None:
    """An id rule: the id starts an ``id text`` line."""
    return line_id_problem(utt_id, f"{fmt} utterance id")


def feature_label(column: str) -> bool:
    """A Moses/Marian feature label cannot be empty or hold spaces, ``=``, ``:`` or ``|``."""
    return not column or bool(_LABEL_CHARS.search(column))


def file_name(column: str) -> bool:
    """A Kaldi score column is a file name: not empty, no ``/``, NUL or leading dot."""
    return not column or "/" in column or "\0" in column or column.startswith(".")


MOSES = dict(translation=True, base=("total",), one_document=True, line_number_ids=True, text_chars=LINE_BREAKS,
             text_words=("|||",), id_problem=integer_id(r"[0-9]+", "a non-negative integer"),
             column_problem=feature_label, suffix=".txt")
REGISTRY: dict[str, Format] = {f.name: f for f in (  # in the order fmt=auto tries them
    Format("espnet2", espnet2_blocks, write_espnet2, writer=espnet2_writer, detect=detect_espnet2, directory=True,
           one_best="text", text_chars=LINE_BREAKS, id_problem=line_id),
    Format("kaldi", kaldi_blocks, write_kaldi, writer=kaldi_writer, detect=detect_kaldi, base=(), directory=True,
           all_columns=True, one_best="text", text_chars=LINE_BREAKS, id_problem=line_id, column_problem=file_name),
    Format("hyporadise", hyporadise_blocks, write_hyporadise, writer=hyporadise_writer, detect=detect_hyporadise,
           base=("am_score", "score"), per_token="HyPoradise scores are per-token log-probabilities", one_document=True,
           holds_empty=True, suffix=".json"),
    Format("jsonl", jsonl_blocks, write_jsonl, writer=jsonl_writer, detect=detect_jsonl, base=("score", "total"),
           all_columns=True, holds_empty=True, suffix=".jsonl"),
    Format("sockeye", sockeye_blocks, write_sockeye, writer=sockeye_writer, detect=detect_sockeye, translation=True,
           per_token="Sockeye scores are length-penalised", one_document=True, holds_empty=True, suffix=".jsonl"),
    Format("espnet1", whole(read_espnet1), write_espnet1, detect=detect_espnet1, one_best="text",
           text_words=("\u2581", "<eos>"), suffix=".json"),
    Format("mlm-scoring", whole(read_mlm_scoring), write_mlm_scoring, detect=detect_mlm_scoring, one_document=True,
           holds_empty=True, suffix=".json"),
    Format("marian", moses_blocks, functools.partial(write_moses, style="marian"),
           writer=functools.partial(moses_writer, style="marian"), detect=detect_marian, **MOSES),
    Format("moses", moses_blocks, write_moses, writer=moses_writer, detect=detect_moses,
           bleu_defaults=(("lowercase", True), ("force", True)), **MOSES),
    Format("fairseq", fairseq_blocks, write_fairseq, writer=fairseq_writer, detect=detect_fairseq, translation=True,
           per_token="fairseq scores are divided by the hypothesis length", one_document=True, line_number_ids=True,
           one_best="generate-1best.txt", one_best_ids=False, text_chars="\t" + LINE_BREAKS, refs_inline=True,
           id_problem=integer_id(r"0|[1-9][0-9]*", "a non-negative integer without leading zeros"), suffix=".txt"),
    Format("nemo", nemo_blocks, write_nemo, writer=nemo_writer, detect=detect_nemo, text_chars="\t" + LINE_BREAKS,
           suffix=".tsv"),
    Format("fields", fields_blocks, write_fields, writer=fields_writer, base=("score", "total"), holds_empty=True,
           suffix=".jsonl"),
)}


def format_of(name: str, path: object = None) -> Format:
    """The record of format ``name``; an unknown name is an :class:`NBestFormatError` naming ``path`` and the known
    formats."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise NBestFormatError(path, None, f"unknown format (known: {', '.join(REGISTRY)})", name) from None


def facts(name: str) -> Format:
    """What is known of format ``name``: its record, or none of the facts for a name no format has (a list built
    by hand with a made-up ``fmt``), which cannot be read or written."""
    if name in REGISTRY:
        return REGISTRY[name]

    def unknown(*args: object, **options: object) -> None:
        format_of(name)
    return Format(name, unknown, unknown, base=())  # type: ignore[arg-type]


def register(fmt: Format) -> None:
    """Add a format, or replace the one of its name: it is read, written, detected and asked about as the shipped
    ones are. ``fmt=auto`` asks a new format's ``detect`` first (a format replaced is asked in its place)."""
    if fmt.name in REGISTRY:
        REGISTRY[fmt.name] = fmt
        return
    entries = {fmt.name: fmt, **REGISTRY}
    REGISTRY.clear()
    REGISTRY.update(entries)


def detectable() -> tuple[str, ...]:
    """The formats ``fmt=auto`` can find, in the order it tries them."""
    return tuple(name for name, fmt in REGISTRY.items() if fmt.detect is not None)
