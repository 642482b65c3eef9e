"""What one N-best format is, as one record: how it is read and written and every fact the rest of the package
asks about it (the registry of the toolkits rescorer knows is :mod:`rescorer.io.formats`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

from ..types import NBest


@dataclass(frozen=True)
class Format:
    """An N-best format: its reader and writer, and what the rest of the package needs to know of it."""

    name: str
    blocks: Callable[..., Iterator[NBest]]
    """The reader: ``blocks(path, size=0, **options)`` gives the list as blocks of whole utterances in file order,
    ``size`` utterances each (the last may be smaller; 0: as they come), at least one block."""
    write: Callable[..., None]
    translation: bool = False
    """An MT format: scored with BLEU unless the metric is named."""
    bleu_defaults: tuple[tuple[str, object], ...] = ()
    """BLEU options its output calls for unless configured (``(option, value)`` pairs). Moses output is lower-cased
    and tokenised by convention: ``lowercase`` true, and ``force`` (sacrebleu's own "forgot to detokenize?"
    warning off: rescorer says so itself when the references are not tokenised alike)."""
    base: tuple[str, ...] = ("score",)
    """The columns the toolkit ranks by, in order of preference: the base (weight 1) LM columns are added to."""
    per_token: str = ""
    """Why the toolkit's own score is per token (empty: a sum over the hypothesis)."""
    one_document: bool = False
    """A file is one document in order: context runs through it (else utterance ids name the recordings)."""
    line_number_ids: bool = False
    """Ids are line numbers: plain references are matched by them."""
    detected: bool = True
    """``fmt=auto`` may pick it (a generic format read through a mapping never is)."""
    directory: bool = False
    """A list is a directory (written as ``NAME/nbest/``)."""
    all_columns: bool = False
    """Every score column is written under its own name (else the base is the format's overall score)."""
    one_best: str = ""
    """The toolkit's own 1-best file written beside a re-ranked list (empty: ``1best.txt`` is it)."""
    one_best_ids: bool = True
    """The toolkit's 1-best file is ``id text`` lines (else the format itself, cut to one hypothesis)."""
    text_chars: str = ""
    """Characters a hypothesis text cannot hold in this format."""
    text_words: tuple[str, ...] = ()
    """Substrings a hypothesis text cannot hold in this format (separators, marks its reader drops)."""
    refs_inline: bool = False
    """References are written among the hypotheses' lines (and so obey ``text_chars`` too)."""
    holds_empty: bool = False
    """It can hold an utterance without hypotheses."""
    id_problem: Callable[[str, str], str | None] | None = None
    """The problem with an utterance id (``(id, format) → problem or None``); None: any id."""
    column_problem: Callable[[str], bool] | None = None
    """Whether a score column name cannot be written; None: any name."""

    def read(self, path: Any, **options: Any) -> NBest:
        """The whole list: its blocks joined."""
        blocks = self.blocks(path, **options)
        first = next(blocks)
        return first.with_utterances([u for block in (first, *blocks) for u in block.utterances])
