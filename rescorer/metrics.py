"""WER and BLEU with per-hypothesis sufficient statistics, oracle selection and baselines.

Each hypothesis of each utterance gets a row of sufficient statistics once
(WER: word errors and reference words, exactly jiwer's S+D+I and H+S+D; BLEU:
sacrebleu's length and n-gram match/total counts). The corpus metric of any
selection of hypotheses is then a gather and a sum, so it equals jiwer /
sacrebleu on the same strings.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cached_property
from importlib.metadata import version
from typing import Sequence

import jiwer
import numpy as np
from rapidfuzz.distance import Levenshtein
from sacrebleu.metrics import BLEU

from .bulk import paused_gc
from .errors import ConfigError, UnknownNameError, check_known
from .options import keywords
from .types import NBest

WER_TRANSFORMS = {"default": jiwer.wer_default, "standardize": jiwer.wer_standardize}


class Metric:
    """A corpus metric computed from summed per-segment statistics, and how to show it:
    ``scale`` × a computed value is the reported value, in ``units``; ``label`` names it on a plot axis."""

    name: str
    higher_is_better: bool
    scale: float
    units: str
    label: str
    options: dict  # what ``make_metric(name, **options)`` needs to build the same metric again

    def __eq__(self, other: object) -> bool:
        """The same metric: the same name and options."""
        return isinstance(other, Metric) and (self.name, self.options) == (other.name, other.options)

    __hash__ = None  # type: ignore[assignment]  # its options may change

    def segment_stats(self, refs: Sequence[str], hyps: Sequence[str]) -> np.ndarray:
        raise NotImplementedError

    def from_stats(self, stats: np.ndarray) -> np.ndarray:
        """Corpus score(s) from summed statistics ``[..., K]``."""
        raise NotImplementedError

    @property
    def signature(self) -> str:
        raise NotImplementedError

    def corpus(self, refs: Sequence[str], hyps: Sequence[str]) -> float:
        """The corpus metric computed by the peer library itself on the strings (the reference path)."""
        raise NotImplementedError

    def mismatches(self, refs: Sequence[str], hyps: Sequence[str]) -> list[str]:
        """What the hypotheses and references say about this metric's options, before anything is scored: a
        difference of form (case, tokenisation) the metric would count as errors, with the option that fixes it."""
        return []


class WER(Metric):
    """Word error rate as a fraction, exactly ``jiwer.wer`` (S+D+I)/(H+S+D)."""

    name = "wer"
    higher_is_better = False
    scale = 100.0
    units = "percent"
    label = "WER (%)"

    def __init__(self, transform: str = "default"):
        if transform not in WER_TRANSFORMS:
            raise UnknownNameError("WER transform", transform, WER_TRANSFORMS)
        self.transform = transform
        self.options = {"transform": transform}

    def segment_stats(self, refs: Sequence[str], hyps: Sequence[str]) -> np.ndarray:
        """[errors, reference words] per pair, with jiwer's transform and jiwer's edit-distance backend."""
        if len(refs) != len(hyps):
            raise ConfigError(f"{len(refs)} references but {len(hyps)} hypotheses")
        distinct = list(dict.fromkeys(refs))  # a reference stands beside each of its hypotheses: transformed once
        ref_words = dict(zip(distinct, self._words(distinct)))
        pairs = zip((ref_words[r] for r in refs), self._words(hyps))
        return np.array([(Levenshtein.distance(r, h), len(r)) for r, h in pairs], dtype=np.int64).reshape(-1, 2)

    def _words(self, texts: Sequence[str]) -> list[list[str]]:
        words = WER_TRANSFORMS[self.transform](list(texts))
        return [w if w != [""] else [] for w in words]

    def from_stats(self, stats: np.ndarray) -> np.ndarray:
        errors, words = stats[..., 0].astype(float), stats[..., 1].astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(words > 0, errors / np.maximum(words, 1), errors)

    def corpus(self, refs: Sequence[str], hyps: Sequence[str]) -> float:
        transform = WER_TRANSFORMS[self.transform]
        return jiwer.wer(list(refs), list(hyps), reference_transform=transform, hypothesis_transform=transform)

    @property
    def signature(self) -> str:
        return f"wer|transform:{self.transform}|jiwer:{version('jiwer')}"


class BLEUMetric(Metric):
    """Corpus BLEU (0–100), exactly ``sacrebleu.corpus_bleu`` with one reference stream."""

    name = "bleu"
    higher_is_better = True
    scale = 1.0
    units = "BLEU (0-100)"
    label = "BLEU"

    def __init__(self, tokenize: str = "13a", lowercase: bool = False, smooth_method: str = "exp",
                 smooth_value: float | None = None, force: bool = False):
        if tokenize not in BLEU.TOKENIZERS:
            raise UnknownNameError("BLEU tokenize", str(tokenize), BLEU.TOKENIZERS)
        if smooth_method not in BLEU.SMOOTH_DEFAULTS:
            raise UnknownNameError("BLEU smooth_method", str(smooth_method), BLEU.SMOOTH_DEFAULTS)
        self.options = {"tokenize": tokenize, "lowercase": lowercase, "smooth_method": smooth_method,
                        "smooth_value": smooth_value, "force": force}
        self.bleu = BLEU(**self.options)
        self.order = self.bleu.max_ngram_order

    def segment_stats(self, refs: Sequence[str], hyps: Sequence[str]) -> np.ndarray:
        if len(refs) != len(hyps):
            raise ConfigError(f"{len(refs)} references but {len(hyps)} hypotheses")
        if not refs:
            return np.zeros((0, 2 + 2 * self.order), dtype=np.int64)
        return np.asarray(self.bleu._extract_corpus_statistics(list(hyps), [list(refs)]), dtype=np.int64)

    def from_stats(self, stats: np.ndarray) -> np.ndarray:
        """Vectorised ``sacrebleu.BLEU.compute_bleu`` (no effective order) over leading axes."""
        stats = np.asarray(stats, dtype=float)
        sys_len, ref_len = stats[..., 0], stats[..., 1]
        correct = stats[..., 2 : 2 + self.order].copy()
        total = stats[..., 2 + self.order :].copy()
        method = self.bleu.smooth_method
        value = self.bleu.smooth_value if self.bleu.smooth_value is not None else BLEU.SMOOTH_DEFAULTS[method]
        with np.errstate(divide="ignore", invalid="ignore"):
            bp = np.where(sys_len < ref_len, np.where(sys_len > 0, np.exp(1 - ref_len / sys_len), 0.0), 1.0)
            any_match = correct.sum(-1) > 0
            if method == "add-k":
                correct[..., 1:] += value
                total[..., 1:] += value
            log_p = np.zeros_like(correct)
            mteval = np.ones_like(sys_len)
            alive = np.ones_like(sys_len, dtype=bool)
            for n in range(self.order):
                alive &= total[..., n] > 0
                zero = correct[..., n] == 0
                mteval = np.where(alive & zero, mteval * 2, mteval) if method == "exp" else mteval
                if method == "exp":
                    smoothed = 100.0 / (mteval * total[..., n])
                elif method == "floor":
                    smoothed = 100.0 * value / total[..., n]
                else:
                    smoothed = np.zeros_like(sys_len)
                p = np.where(zero, smoothed, 100.0 * correct[..., n] / total[..., n])
                p = np.where(alive, p, 0.0)
                log_p[..., n] = np.where(p > 0, np.log(np.where(p > 0, p, 1.0)), -9999999999.0)
            score = bp * np.exp(log_p.sum(-1) / self.order)
        return np.where(any_match, score, 0.0)

    def corpus(self, refs: Sequence[str], hyps: Sequence[str]) -> float:
        return self.bleu.corpus_score(list(hyps), [list(refs)]).score

    def mismatches(self, refs: Sequence[str], hyps: Sequence[str]) -> list[str]:
        found = []
        hyp_text, ref_text = " ".join(hyps), " ".join(refs)
        if (not self.options["lowercase"] and any(c.isalpha() for c in hyp_text) and hyp_text == hyp_text.lower()
                and ref_text != ref_text.lower()):
            found.append("the hypotheses are all lowercase but the references are not: BLEU counts every case "
                         "difference as an error; data.metric.lowercase=true compares them without case")
        if tokenised_share(hyps) > 0.3 and tokenised_share(refs) < 0.05 and self.options["tokenize"] != "none":
            found.append("the hypotheses look tokenised (spaces before punctuation, escapes like &apos;) but the "
                         "references do not: detokenise the hypotheses before scoring (sacremoses, or the toolkit's "
                         "own detokenizer), or tokenise both alike and pass data.metric.tokenize=none")
        return found

    @property
    def signature(self) -> str:
        """sacrebleu's own signature (it is known only once something was scored: one stream, one empty pair)."""
        try:
            return str(self.bleu.get_signature())
        except ValueError:
            self.bleu.corpus_score([""], [[""]])
            return str(self.bleu.get_signature())


TOKENISED = re.compile(r" [,.;:!?)%]|\( | n't\b| 's\b|&apos;|&quot;|&amp;|@-@")  # Moses-style tokens


def tokenised_share(texts: Sequence[str]) -> float:
    """The share of ``texts`` that carry a sign of tokenisation (a space before punctuation, a split clitic, an
    escaped character)."""
    return sum(bool(TOKENISED.search(text)) for text in texts) / max(1, len(texts))


METRICS = {"wer": WER, "bleu": BLEUMetric}


def make_metric(name: str, **options) -> Metric:
    """``wer`` or ``bleu`` with its options; an unknown name or option is one line naming it."""
    if name not in METRICS:
        raise UnknownNameError("metric", name, list(METRICS))
    check_known(f"{name} option", options, keywords(METRICS[name].__init__)[0] - {"self"})
    return METRICS[name](**options)


STATS_CHUNK = 8192  # hypotheses whose statistics are computed at once: their word lists and n-grams are many times
# the texts' size, so a list of any length is taken a piece at a time


@dataclass(frozen=True)
class NBestStats:
    """Sufficient statistics of every hypothesis: ``stats[u, k]`` for hypothesis k of utterance u (zero-padded)."""

    metric: Metric
    stats: np.ndarray
    lengths: np.ndarray

    @classmethod
    @paused_gc()  # a list of word lists per chunk of hypotheses
    def compute(cls, nbest: NBest, metric: Metric) -> "NBestStats":
        if not nbest.has_refs:
            missing = next(u for u in nbest if u.ref is None)
            raise ConfigError(f"{nbest.source}: utterance {missing.id!r} has no reference; pass refs=")
        lengths = np.array([len(u.hyps) for u in nbest], dtype=np.int64)
        refs = [u.ref for u in nbest for _ in u.hyps]
        hyps = [h.text for u in nbest for h in u.hyps]
        flat = np.concatenate([metric.segment_stats(refs[start : start + STATS_CHUNK], hyps[start : start + STATS_CHUNK])
                               for start in range(0, max(len(hyps), 1), STATS_CHUNK)])
        width = max(int(lengths.max(initial=0)), 1)
        stats = np.zeros((len(nbest), width, flat.shape[1]), dtype=np.int64)
        mask = np.arange(width)[None, :] < lengths[:, None]
        stats[mask] = flat
        empty = lengths == 0
        if empty.any():
            refs_of_empty = [nbest.utterances[i].ref for i in np.flatnonzero(empty)]
            stats[empty, 0] = metric.segment_stats(refs_of_empty, [""] * len(refs_of_empty))
        return cls(metric, stats, lengths)

    @cached_property
    def valid(self) -> np.ndarray:
        return np.arange(self.stats.shape[1])[None, :] < np.maximum(self.lengths, 1)[:, None]

    def score(self, ranks: Sequence[int] | np.ndarray) -> float:
        """Corpus metric of the hypotheses at 0-based ``ranks`` (one per utterance)."""
        ranks = np.asarray(ranks, dtype=np.int64)
        chosen = self.stats[np.arange(len(ranks)), ranks]
        return float(self.metric.from_stats(chosen.sum(0)))

    def baseline_ranks(self) -> np.ndarray:
        return np.zeros(len(self.lengths), dtype=np.int64)

    def oracle_ranks(self, passes: int = 10) -> np.ndarray:
        """Best hypothesis per utterance: exact for WER; for BLEU a greedy corpus-level oracle
        (start from the best sentence-level choice, then change one utterance at a time while corpus BLEU rises)."""
        if isinstance(self.metric, WER):
            errors = np.where(self.valid, self.stats[..., 0], np.iinfo(np.int64).max)
            return errors.argmin(1)
        sentence = np.where(self.valid, self.metric.from_stats(self.stats), -math.inf)
        ranks = sentence.argmax(1)
        total = self.stats[np.arange(len(ranks)), ranks].sum(0)
        best = float(self.metric.from_stats(total))
        for _ in range(passes):
            changed = False
            for u in range(len(ranks)):
                others = total - self.stats[u, ranks[u]]
                candidates = np.where(self.valid[u], self.metric.from_stats(others + self.stats[u]), -math.inf)
                k = int(candidates.argmax())
                if candidates[k] > best + 1e-12:
                    total, best, ranks[u], changed = others + self.stats[u, k], float(candidates[k]), k, True
            if not changed:
                break
        return ranks


def sentence_lists(refs: Sequence[str] | str, hyps: Sequence[str] | str) -> tuple[list[str], list[str]]:
    """What a metric function scores: two strings are one sentence pair; else two lists (or tuples) of strings.
    Anything else (one string beside a list, a generator, a number) is a ConfigError."""
    if isinstance(refs, str) and isinstance(hyps, str):
        return [refs], [hyps]
    for name, texts in (("refs", refs), ("hyps", hyps)):
        if not isinstance(texts, (list, tuple)):
            raise ConfigError(f"{name} must be a list of strings (or, with a string beside it, one string), "
                              f"not {type(texts).__name__}")
        bad = next((k for k, text in enumerate(texts) if not isinstance(text, str)), None)
        if bad is not None:
            raise ConfigError(f"{name}[{bad}] is not a string: {texts[bad]!r}")
    return list(refs), list(hyps)


def wer(refs: Sequence[str] | str, hyps: Sequence[str] | str, transform: str = "default") -> float:
    """Corpus WER of ``hyps`` against ``refs`` (two strings: one sentence) in percent, as every report writes it
    (100 × ``jiwer.wer``)."""
    metric = WER(transform)
    return float(metric.scale * metric.from_stats(metric.segment_stats(*sentence_lists(refs, hyps)).sum(0)))


def bleu(refs: Sequence[str] | str, hyps: Sequence[str] | str, **options) -> float:
    """Corpus BLEU (0–100, like ``sacrebleu.corpus_bleu`` and every report) of ``hyps`` against one reference
    stream ``refs`` (two strings: one sentence)."""
    metric = make_metric("bleu", **options)
    return float(metric.scale * metric.from_stats(metric.segment_stats(*sentence_lists(refs, hyps)).sum(0)))


@dataclass(frozen=True)
class Perplexity:
    """(Pseudo-)perplexity of a text set: exp(−Σ log-score / N), N in scored tokens or in words."""

    log_score: float
    tokens: int
    words: int

    @classmethod
    def of(cls, token_scores: Sequence[Sequence[float]], texts: Sequence[str]) -> "Perplexity":
        if len(token_scores) != len(texts):
            raise ConfigError(f"{len(token_scores)} score lists but {len(texts)} texts")
        return cls(float(sum(math.fsum(t) for t in token_scores)), sum(len(t) for t in token_scores),
                   sum(len(text.split()) for text in texts))

    def __add__(self, other: "Perplexity") -> "Perplexity":
        """The perplexity of both text sets together."""
        return Perplexity(self.log_score + other.log_score, self.tokens + other.tokens, self.words + other.words)

    @property
    def token_level(self) -> float:
        return math.exp(-self.log_score / self.tokens) if self.tokens else math.nan

    @property
    def word_level(self) -> float:
        return math.exp(-self.log_score / self.words) if self.words else math.nan

    def as_dict(self) -> dict[str, float]:
        return {"token_ppl": self.token_level, "word_ppl": self.word_level, "tokens": self.tokens,
                "words": self.words, "log_score": self.log_score}


BOOTSTRAP_BLOCK = 1 << 20  # resampled utterance indices drawn at once (8 MB of them, and their statistics)


def paired_bootstrap(stats: NBestStats, baseline: np.ndarray, system: np.ndarray, samples: int = 1000,
                     seed: int = 0, level: float = 0.95) -> dict[str, float]:
    """Confidence interval of metric(system) − metric(baseline), resampling utterances with replacement
    (Koehn 2004); both systems see the same resamples. Also the share of resamples where the system is better."""
    a, b = (np.ascontiguousarray(np.take_along_axis(stats.stats, np.asarray(r, dtype=np.int64)[:, None, None],
                                                    axis=1)[:, 0].T) for r in (baseline, system))
    return resampled_change(stats.metric, a, b, samples, seed, level)


def resampled_change(metric: Metric, a: np.ndarray, b: np.ndarray, samples: int = 1000, seed: int = 0,
                     level: float = 0.95) -> dict[str, float]:
    """:func:`paired_bootstrap` of each utterance's statistics under the baseline (``a``) and the system (``b``),
    ``[S, U]`` each: U draws of utterances per resample, summed a step at a time, never a row per utterance."""
    size = a.shape[1]
    rng = np.random.default_rng(seed)
    per, step = max(1, BOOTSTRAP_BLOCK // max(size, 1)), min(max(size, 1), BOOTSTRAP_BLOCK)
    sums = np.zeros((2, len(a), samples), dtype=np.promote_types(a.dtype, np.int64))  # [a or b, S, resample]
    for start in range(0, samples, per):  # a block of resamples at a time, as one call of size (samples, U) draws
        stop = min(start + per, samples)
        for at in range(0, size, step):  # a resample of many utterances in steps: memory stays flat as U grows
            drawn = rng.integers(0, size, size=(stop - start, min(step, size - at)))
            sums[0, :, start:stop] += np.take(a, drawn, axis=1).sum(-1, dtype=sums.dtype)
            sums[1, :, start:stop] += np.take(b, drawn, axis=1).sum(-1, dtype=sums.dtype)
    diff = metric.from_stats(sums[1].T) - metric.from_stats(sums[0].T)
    tail = (1 - level) / 2
    better = diff > 0 if metric.higher_is_better else diff < 0
    return {"low": float(np.quantile(diff, tail)), "high": float(np.quantile(diff, 1 - tail)),
            "p_better": float(better.mean()), "samples": samples, "level": level}


MIN_UTTERANCES, MIN_SAMPLES = 30, 1000  # below either, no interval is called significant


def significance(low: float, high: float, higher_is_better: bool, utterances: int | None = None,
                 samples: int | None = None, equal: bool = False) -> str:
    """A change in plain words from its 95% interval: significant only when the interval excludes 0, from at
    least 30 utterances and 1,000 resamples; equal results are "unchanged", never better."""
    if equal or (low, high) == (0, 0):
        return "unchanged"
    if utterances is not None and utterances < MIN_UTTERANCES:
        return f"too few utterances to tell ({utterances} < {MIN_UTTERANCES})"
    if samples is not None and samples < MIN_SAMPLES:
        return f"too few resamples to tell (task.bootstrap={samples} < {MIN_SAMPLES})"
    if low <= 0 <= high:
        return "no significant change"
    return "significantly " + ("better" if (low > 0) == higher_is_better else "worse")
