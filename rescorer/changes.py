"""Which 1-best texts rescoring changed, whether each got better or worse, and how the words differ.

Word errors are jiwer's S+D+I against the reference (the same count as ``metrics.WER``); BLEU
is sacrebleu's sentence BLEU with effective order. An utterance without a reference gets the
verdict "unknown".
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Sequence

import jiwer
from sacrebleu.metrics import BLEU

from .errors import ConfigError
from .metrics import WER_TRANSFORMS, Metric

VERDICTS = ("better", "worse", "same", "unknown")
WordOp = tuple[str, tuple[str, ...], tuple[str, ...]]


@dataclass(frozen=True)
class Change:
    """One utterance whose 1-best changed. ``before_score``/``after_score`` are word errors (WER) or
    sentence BLEU (BLEU) against ``ref``, ``None`` without a reference; ``higher_is_better`` says which way
    is better."""

    id: str
    ref: str | None
    before: str
    after: str
    verdict: str
    before_score: float | None = None
    after_score: float | None = None
    higher_is_better: bool = False
    metric: str = "wer"
    view: str = ""  # how the metric compares the texts, and so how their differences are shown (:func:`compared`)

    @property
    def gain(self) -> float:
        """How much better ``after`` is than ``before`` (negative: worse; 0 without a reference)."""
        if self.before_score is None or self.after_score is None:
            return 0.0
        if self.higher_is_better:
            return self.after_score - self.before_score
        return self.before_score - self.after_score


def metric_view(metric: str | Metric) -> str:
    """How ``metric`` compares texts, as :func:`compared` reads it: ``""`` as written; ``standardize`` (WER's
    jiwer transform); ``lowercase`` and/or ``tokenize:NAME`` (BLEU's options)."""
    if getattr(metric, "name", metric) == "wer":
        transform = getattr(metric, "transform", "default")
        return "" if transform == "default" else transform
    options = getattr(metric, "options", {})
    parts = (["lowercase"] if options.get("lowercase") else []) + (
        [f"tokenize:{options['tokenize']}"] if options.get("tokenize", "none") != "none" else [])
    return "+".join(parts)


def compared(text: str, view: str) -> str:
    """``text`` as a metric of ``view`` (:func:`metric_view`) compares it: lower-cased and tokenised by BLEU's
    options; WER transforms apply word by word in :func:`word_ops`."""
    for part in view.split("+") if view and view not in WER_TRANSFORMS else ():
        if part == "lowercase":
            text = text.lower()
        elif part.startswith("tokenize:"):
            text = _tokenizer(part.split(":", 1)[1])(text)
    return text


@functools.lru_cache(maxsize=None)
def _tokenizer(name: str):
    return BLEU(tokenize=name).tokenizer


def word_ops(ref: str, hyp: str, transform: str = "default") -> list[WordOp]:
    """The word alignment of ``hyp`` to ``ref`` as (op, ref words, hyp words), op one of equal, substitute,
    insert, delete; either text may be empty. ``transform``: a WER transform, or a BLEU view (:func:`metric_view`)
    under which both texts are compared."""
    if transform not in WER_TRANSFORMS:
        ref, hyp, transform = compared(ref, transform), compared(hyp, transform), "default"
    words = WER_TRANSFORMS[transform]
    out = jiwer.process_words(ref, hyp, reference_transform=words, hypothesis_transform=words)
    r, h = out.references[0], out.hypotheses[0]
    return [(c.type, tuple(r[c.ref_start_idx : c.ref_end_idx]), tuple(h[c.hyp_start_idx : c.hyp_end_idx]))
            for c in out.alignments[0]]


def word_errors(ref: str, hyp: str, transform: str = "default") -> int:
    """Substitutions + deletions + insertions of ``hyp`` against ``ref``."""
    return sum(max(len(r), len(h)) for op, r, h in word_ops(ref, hyp, transform) if op != "equal")


def word_marks(ref: str, hyp: str, view: str = "") -> list[tuple[str, str | None, str | None]]:
    """The alignment word by word: ``(op, reference word, hypothesis word)``, None where one side has none, the
    texts compared as the metric's ``view`` compares them (:func:`metric_view`)."""
    out: list[tuple[str, str | None, str | None]] = []
    for op, r, h in word_ops(ref, hyp, view or "default"):
        if op in ("equal", "substitute"):
            out += [(op, a, b) for a, b in zip(r, h)]
        else:
            out += [(op, a, None) for a in r] if op == "delete" else [(op, None, b) for b in h]
    return out


MARKS = {"equal": "{b}", "substitute": "[{a}→{b}]", "delete": "[-{a}]", "insert": "[+{b}]"}


def marked(ref: str, hyp: str, context: int | None = None, view: str = "") -> str:
    """``hyp`` on one line with its differences from ``ref`` marked: ``[a→b]`` reference word a written as b,
    ``[-a]`` a left out, ``[+b]`` b added; matching words as they are. With ``context``, only that many matching
    words are kept either side of a difference (``…`` for the rest, ``= reference`` when nothing differs). The
    texts are compared as the metric's ``view`` compares them (:func:`metric_view`): a case difference is no
    difference under a lower-cased BLEU."""
    marks = word_marks(ref, hyp, view)
    differ = [i for i, (op, _, _) in enumerate(marks) if op != "equal"]
    if context is None or not marks:
        return " ".join(MARKS[op].format(a=a, b=b) for op, a, b in marks)
    if not differ:
        return "= reference"
    parts: list[str] = []
    for i, (op, a, b) in enumerate(marks):
        if min(abs(i - d) for d in differ) <= context:
            parts.append(MARKS[op].format(a=a, b=b))
        elif not parts or parts[-1] != "…":
            parts.append("…")
    return " ".join(parts)


def _scorer(metric: str | Metric):
    """(score(ref, hyp), higher_is_better, name) for "wer", "bleu" or a ``metrics.Metric``."""
    name = getattr(metric, "name", metric)
    if name == "wer":
        transform = getattr(metric, "transform", "default")
        return (lambda ref, hyp: word_errors(ref, hyp, transform)), False, name
    if name == "bleu":
        base = getattr(metric, "bleu", None)
        options = {} if base is None else {
            "tokenize": base.tokenizer_signature, "lowercase": base.lowercase,
            "smooth_method": base.smooth_method, "smooth_value": base.smooth_value}
        bleu = BLEU(effective_order=True, **options)
        return (lambda ref, hyp: bleu.sentence_score(hyp, [ref]).score), True, name
    raise ConfigError(f"unknown metric {name!r} (choose wer or bleu)")


def verdict(before: float | None, after: float | None, higher_is_better: bool) -> str:
    """better / worse / same from two per-utterance numbers; unknown when either is missing."""
    if before is None or after is None:
        return "unknown"
    if math.isclose(before, after, rel_tol=1e-9, abs_tol=1e-9):
        return "same"
    return "better" if (after > before) == higher_is_better else "worse"


def changed(ids: Sequence[str], before: Sequence[str], after: Sequence[str], refs: Sequence[str | None] | None,
            metric: str | Metric = "wer") -> list[Change]:
    """A ``Change`` for every utterance whose 1-best text differs between ``before`` and ``after``, in input
    order; ``refs`` may be ``None`` or hold ``None`` for utterances without a reference."""
    refs = [None] * len(ids) if refs is None else refs
    if not len(ids) == len(before) == len(after) == len(refs):
        raise ConfigError(f"{len(ids)} ids, {len(before)} before, {len(after)} after and {len(refs)} references")
    score, higher, name = _scorer(metric)
    view = metric_view(metric)
    out = []
    for utt, ref, old, new in zip(ids, refs, before, after):
        if old == new:
            continue
        s0, s1 = (None, None) if ref is None else (score(ref, old), score(ref, new))
        out.append(Change(utt, ref, old, new, verdict(s0, s1, higher), s0, s1, higher, name, view))
    return out


def examples(changes: Sequence[Change], k: int = 3) -> list[Change]:
    """Up to ``k`` changes to show a person: the biggest improvements first, then the biggest regressions
    (one place is kept for a regression when there is one and ``k`` > 1), then the rest in input order."""
    order = {id(c): n for n, c in enumerate(changes)}
    better = sorted((c for c in changes if c.verdict == "better"), key=lambda c: (-c.gain, order[id(c)]))
    worse = sorted((c for c in changes if c.verdict == "worse"), key=lambda c: (c.gain, order[id(c)]))
    rest = [c for c in changes if c.verdict not in ("better", "worse")]
    keep = min(len(better), k - 1 if worse and k > 1 else k)
    return (better[:keep] + worse + better[keep:] + rest)[:k]
