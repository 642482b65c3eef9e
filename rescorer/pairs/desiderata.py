"""Kauf & Ivanova's desiderata for a (P)LL metric (§4–5), on any sentence set:

(a) ``length``: Pearson r of −score(S) with |S| in scored tokens (longer sentences should be less likely: r > 0);
(b) ``frequency``: r of a word's score — the log-probs of only its own tokens, the word placed in a frame
    ("My word is {word}." or alone) — with its log frequency (``wordfreq``'s Zipf scale, offline): r > 0;
(c) ``causal``: r of the sentence PLL with a causal LM's LL of the same sentences: r > 0.
Higher r is better on each; the paper found PLL-word-l2r above PLL-original on all three for BERT.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from ..engine import BoundScorer
from .accuracy import pearson
from .methods import fill

FRAMES = {"my_word": "My word is {word}.", "no_context": "{word}"}
WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")


def words_of(sentences: Sequence[str]) -> list[str]:
    """The distinct words of ``sentences`` (letters, inner apostrophes), lower-cased, in order of appearance."""
    return list(dict.fromkeys(w.lower() for s in sentences for w in WORD.findall(s)))


def log_frequencies(words: Sequence[str], language: str = "en") -> np.ndarray:
    """log10 frequency per billion words (Zipf scale; 0 for words wordfreq has never seen)."""
    from wordfreq import zipf_frequency

    return np.array([zipf_frequency(w, language) for w in words])


def multi_token_share(tokenizer: Any, words: Sequence[str]) -> float:
    """The share of ``words`` (as inside a sentence: after a space) the tokenizer splits into more than one token
    (Kauf & Ivanova's OOV ratio), in %."""
    counts = [len(ids) for ids in tokenizer([f" {w}" for w in words], add_special_tokens=False)["input_ids"]]
    return 100.0 * float(np.mean([c > 1 for c in counts])) if counts else 0.0


def scored_spans(tokenizer: Any, text: str) -> list[tuple[int, int]]:
    """Character spans of the tokens a scorer scores (every token but the special ones), in order."""
    enc = tokenizer(text, return_offsets_mapping=True, return_special_tokens_mask=True)
    return [tuple(span) for span, special in zip(enc["offset_mapping"], enc["special_tokens_mask"]) if not special]


def word_scores(scorer: BoundScorer, words: Sequence[str], frame: str) -> np.ndarray:
    """The summed log-probs of each word's own tokens, the word placed in ``frame`` (context tokens unscored)."""
    texts = [fill(frame, word=w) for w in words]
    start = frame.index("{word}")
    scores = []
    for text, word, (_, tokens) in zip(texts, words, scorer.compute(texts, normalise=False)):
        end = start + len(word)
        spans = scored_spans(scorer.tokenizer, text)
        scores.append(sum(score for (a, b), score in zip(spans, tokens) if a < end and b > start))
    return np.array(scores)


@dataclass
class DesiderataScores:
    """What the desiderata correlate, from one scorer."""

    sentence: np.ndarray            # (P)LL of each sentence
    tokens: np.ndarray              # its scored tokens
    words: dict[str, np.ndarray]    # frame → each word's score

    @classmethod
    def of(cls, scorer: BoundScorer, sentences: Sequence[str], words: Sequence[str],
           frames: Mapping[str, str] = FRAMES) -> "DesiderataScores":
        scored = scorer.compute(sentences, normalise=False)
        return cls(np.array([total for total, _ in scored]), np.array([len(t) for _, t in scored]),
                   {name: word_scores(scorer, words, frame) for name, frame in frames.items()})




def correlations(scores: DesiderataScores, log_freq: np.ndarray, causal: np.ndarray | None = None) -> dict[str, Any]:
    """The three desiderata as Pearson r (None where undefined; ``causal`` None: no causal LM given)."""
    return {"length": pearson(-scores.sentence, scores.tokens),
            "frequency": {name: pearson(values, log_freq) for name, values in scores.words.items()},
            "causal": None if causal is None else pearson(scores.sentence, causal)}


def verdicts(table: Mapping[str, Mapping[str, Any]], better: str = "word_l2r", than: str = "original") -> dict[str, Any]:
    """For each desideratum, whether ``better``'s r is higher than ``than``'s (None when either is missing)."""
    def higher(a: float | None, b: float | None) -> bool | None:
        return None if a is None or b is None else a > b

    x, y = table[better], table[than]
    return {"length": higher(x["length"], y["length"]),
            "frequency": {f: higher(x["frequency"][f], y["frequency"][f]) for f in x["frequency"]},
            "causal": higher(x["causal"], y["causal"])}
