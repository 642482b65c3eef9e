"""Context across utterances: which recording or document each utterance belongs to, and the text of the
utterances before it, so that a scorer can score a hypothesis given what was said just before.

A conditional text is ``context + SEPARATOR + hypothesis`` (``+ SEPARATOR + following`` where the utterances after it
are read too); a scorer with context scores only the hypothesis (and its end), and the score store keys on the whole
string, so a score is never reused under another context.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any, Callable, Mapping, Sequence

from .errors import ConfigError, check_known
from .io.formats import facts
from .io.target import native_format
from .options import Option, checked
from .types import NBest

SEPARATOR = "\ue000"  # a private-use character: no text holds it, and no normalisation touches it
SOURCES = ("first_pass", "rescored", "reference")
OPTIONS = {"utterances": Option("integer", low=1, high=1000), "tokens": Option("integer", low=1, high=1 << 20),
           "source": Option("text"), "group": Option("text", null=True),
           "following": Option("integer", low=0, high=1000)}


@dataclass(frozen=True)
class Context:
    """A scorer's context: the 1-bests of up to ``utterances`` previous utterances of the same recording or
    document, cut to the last ``tokens`` tokens, taken from ``source`` (``first_pass``: the input 1-bests;
    ``rescored``: the re-ranked 1-bests, each recording re-ranked in order; ``reference``: the references, for
    analysis only, never for tuning). ``group`` is a regex whose first group
    (or whole match) in an utterance id names its recording; None: the format's own grouping. ``following``: the
    1-bests of up to that many later utterances are read too, after the hypothesis (masked LMs only), each side cut
    to ``tokens``."""

    utterances: int = 5
    tokens: int = 256
    source: str = "first_pass"
    group: str | None = None
    following: int = 0

    @classmethod
    def of(cls, options: Mapping[str, Any] | None) -> "Context | None":
        """The context a scorer's ``context`` option describes (None, or an empty mapping: no context)."""
        if options is None or (isinstance(options, Mapping) and not options):
            return None
        Option("mapping").check("context", options)
        check_known("context key", options, OPTIONS)
        checked("context.", options, OPTIONS)
        check_known("context.source", [options.get("source", "first_pass")], SOURCES)
        if options.get("group") is not None:
            try:
                re.compile(options["group"])
            except re.error as err:
                raise ConfigError(f"context.group={options['group']!r} is not a regular expression: {err}") from None
        if options.get("source") == "rescored" and options.get("following"):
            raise ConfigError("context.source=rescored reads the utterances before, already re-ranked; it cannot "
                              "read the following ones (use following: 0, or source: first_pass)")
        return cls(**options)

    @property
    def reranked(self) -> bool:
        """Whether this context reads the re-ranked 1-bests (known only once the weights are)."""
        return self.source == "rescored"

    @property
    def signature(self) -> str:
        return f"{self.utterances}/{self.tokens}/{self.source}" + (f"/+{self.following}" if self.following else "")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def groups(nbest: NBest, pattern: str | None = None) -> list[str]:
    """The recording (or document) of each utterance: from ``pattern`` (first group, else the whole match, of a
    search in the id), else the format's own (for canonical JSONL, the format it was converted from): one document
    for translation and HyPoradise lists, else the id without its last ``-``/``_`` field (``spk-chapter`` of
    LibriSpeech's ``spk-chapter-utt``)."""
    if pattern is not None:
        regex = re.compile(pattern)
        found = []
        for utt in nbest:
            match = regex.search(utt.id)
            if match is None:
                raise ConfigError(f"{utt.origin or nbest.source}: context.group={pattern!r} does not match "
                                  f"utterance id {utt.id!r}")
            found.append(match.group(1) if regex.groups else match.group(0))
        return found
    if facts(native_format(nbest)).one_document:  # translation, HyPoradise: the position is the line
        return [""] * len(nbest)
    found = [re.split(r"[-_](?=[^-_]*$)", utt.id)[0] if re.search(r"[-_]", utt.id) else None for utt in nbest]
    loose = next((utt for utt, group in zip(nbest, found) if group is None), None)
    if loose is not None:
        raise ConfigError(f"{loose.origin or nbest.source}: utterance id {loose.id!r} names no recording "
                          "(no spk-chapter-utt form): set the scorer's context.group to a regex on the ids")
    return found  # type: ignore[return-value]


def previous(texts: Sequence[str], owners: Sequence[str], count: int) -> list[list[str]]:
    """For each position, the ``texts`` of up to ``count`` earlier positions with the same owner, oldest first."""
    seen: dict[str, list[str]] = {}
    out = []
    for text, owner in zip(texts, owners):
        before = seen.setdefault(owner, [])
        out.append(before[-count:])
        before.append(text)
    return out


def contexts(nbest: NBest, context: Context, normalise: Callable[[str], str], count: int | None = None,
             firsts: Sequence[str] | None = None) -> list[str]:
    """The context of each utterance of ``nbest``: its ``context.source`` texts (input 1-bests, the re-ranked
    ``firsts`` where given, or references) of up to ``count`` (default ``context.utterances``) earlier utterances
    of its recording, each normalised, joined by spaces; empty for the first utterance of a recording. A negative
    ``count`` reads that many later ones."""
    if context.source == "reference" and not nbest.has_refs:
        raise ConfigError(f"{nbest.source}: context.source=reference needs references for every utterance")
    if context.source == "reference":
        sources = nbest.refs()
    else:
        sources = firsts if context.reranked and firsts is not None else nbest.select([0] * len(nbest))
    texts, owners = [normalise(text) for text in sources], groups(nbest, context.group)
    count = context.utterances if count is None else count
    if count >= 0:
        found = previous(texts, owners, count)
    else:  # the later ones, nearest first: the earlier ones of the reversed list, reversed
        found = [after[::-1] for after in previous(texts[::-1], owners[::-1], -count)][::-1]
    return [" ".join(text for text in near if text) for near in found]


def conditional(context: str, text: str, following: str = "") -> str:
    """``text`` after ``context`` (and before ``following``), as a scorer with context reads it (a text may not
    hold the separator)."""
    if SEPARATOR in text:
        raise ConfigError(f"text {text[:60]!r} holds the character U+E000, which marks where a context ends")
    return context + SEPARATOR + text + (SEPARATOR + following if following else "")


def scored_texts(nbest: NBest, context: Context | None, normalise: Callable[[str], str],
                 chosen: Sequence[str] | None = None, firsts: Sequence[str] | None = None) -> list[str]:
    """What a scorer with ``context`` (None: none) scores for every hypothesis of ``nbest`` (``texts()`` order), or
    for ``chosen`` (one text per utterance): each normalised, after its utterance's context where there is one
    (from ``nbest`` as read, whatever was chosen; a ``rescored`` context from the re-ranked 1-bests ``firsts``,
    the input's until they are known)."""
    texts = nbest.texts() if chosen is None else list(chosen)
    normalised = [normalise(text) for text in texts]
    if context is None:
        return normalised
    before = contexts(nbest, context, normalise, firsts=firsts)
    after = contexts(nbest, context, normalise, -context.following) if context.following else [""] * len(nbest)
    owners = (u for u, utt in enumerate(nbest) for _ in utt.hyps) if chosen is None else range(len(texts))
    return [conditional(before[u], text, after[u]) for u, text in zip(owners, normalised)]


def split(text: str) -> tuple[str, str, str]:
    """(context before, hypothesis, context after) of a conditional text; a plain text has empty contexts."""
    parts = text.split(SEPARATOR)
    return ("", text, "") if len(parts) == 1 else (parts[0], parts[1], SEPARATOR.join(parts[2:]))
