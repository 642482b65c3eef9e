"""What one N-best format is, as one record: how it is read, written and recognised and every fact the rest of the
package asks about it (the registry of the toolkits rescorer knows is :mod:`rescorer.io.formats`); and the
:class:`Sample` of a path that formats are recognised by."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import islice
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator

from ..types import NBest
from .codec import DecodeError, load_json, loads
from .common import iter_lines, read_text, split_lines

HEAD_LINES = 200  # the lines a format is detected by: a list of any size is not read whole


@dataclass(frozen=True)
class Sample:
    """What format detection looks at in one path, each part read once, when a format first asks for it."""

    path: Path
    is_dir: bool

    @cached_property
    def lines(self) -> list[str]:
        """The file's first lines (at most :data:`HEAD_LINES`)."""
        return [line for _, line in islice(iter_lines(self.path), HEAD_LINES)]

    @cached_property
    def text(self) -> str:
        """The whole file."""
        return read_text(self.path)

    @cached_property
    def first(self) -> str:
        """The first line that is not blank (the file's first line when the head is all blank)."""
        first = next((line for line in self.lines if line.strip()), None)
        return split_lines(self.text)[0] if first is None else first  # a file of blank lines is refused as empty

    @cached_property
    def braced(self) -> bool:
        """The first line opens a JSON object: the file is for a JSON format, never for a line format."""
        return self.first.lstrip().startswith("{")

    @cached_property
    def head(self) -> dict | None:
        """The first line's JSON object; None when it opens none or is not a whole one."""
        if not self.braced:
            return None
        try:
            return loads(self.first.strip())
        except DecodeError:
            return None

    @cached_property
    def document(self) -> dict | None:
        """The JSON object the file opens with: the first line's when it is a whole one, else the whole file's
        (invalid JSON is an error naming its line); None when the first line opens none."""
        if not self.braced or self.head is not None:
            return self.head
        return load_json(self.text, self.path)  # type: ignore[return-value]


@dataclass(frozen=True)
class Format:
    """An N-best format: its reader and writer, and what the rest of the package needs to know of it."""

    name: str
    blocks: Callable[..., Iterator[NBest]]
    """The reader: ``blocks(path, size=0, **options)`` gives the list as blocks of whole utterances in file order,
    ``size`` utterances each (the last may be smaller; 0: as they come), at least one block."""
    write: Callable[..., None]
    """The writer of a whole list: ``write(nbest, path, **options)``, atomically."""
    writer: Callable[..., ContextManager[Callable[[NBest], None]]] | None = None
    """A writer of blocks, where the format has one: ``writer(path, like)`` gives a function that writes each block
    as it comes (``like``: the list's fmt and meta), the file in place when the context ends; None: the blocks are
    gathered and written whole."""
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
    detect: Callable[[Sample], bool] | None = None
    """Whether a path is in this format (asked only of directories for a directory format, only of files for the
    others, in registry order: the first that says yes is the format ``fmt=auto`` picks); None: never detected (a
    generic format read through a mapping)."""
    directory: bool = False
    """A list is a directory (written as ``NAME/nbest/``)."""
    suffix: str = ""
    """How the name of a file in this format ends when rescorer names it (``task=convert``); empty for a directory
    format."""
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
