"""Kauf & Ivanova's desiderata (§4–5) for each PLL variant on a sentence set (``rescorer task=desiderata``).

For each variant of the masked LM (and the causal LM as a reference row): (a) r(−score, tokens),
(b) r(word score in each frame, word log frequency), (c) r(PLL, the causal LM's LL). Writes report.{json,md}
with whether ``word_l2r`` beats ``original`` on each, and desiderata.png (one scatter per variant and desideratum).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..engine import BoundScorer
from ..pairs.desiderata import (FRAMES, DesiderataScores, correlations, log_frequencies, multi_token_share,
                                verdicts, words_of)
from ..report.plots import scatter_grid
from ..report import write_report
from ..version import TOOL, signature

PAPER = "Kauf & Ivanova (BERT-base, EventsAdapt): word_l2r above original on all three"


def desiderata(sentences: Sequence[str], masked: Mapping[str, BoundScorer], causal: BoundScorer | None, out_dir: str | Path,
               name: str = "sentences", frames: Mapping[str, str] = FRAMES, language: str = "en") -> dict[str, Any]:
    """The desiderata of each masked scorer ({variant: scorer}) and of ``causal`` (reference), with plots."""
    words = words_of(sentences)
    log_freq = log_frequencies(words, language)
    scorers = {**masked, **({"ll": causal} if causal is not None else {})}
    timings, scores = {}, {}
    for label, scorer in scorers.items():
        start = time.perf_counter()
        scores[label] = DesiderataScores.of(scorer, sentences, words, frames)
        timings[label] = time.perf_counter() - start
    reference = scores["ll"].sentence if causal is not None else None
    table = {label: {**correlations(s, log_freq, None if label == "ll" else reference), "seconds": timings[label]}
             for label, s in scores.items()}
    out = Path(out_dir)
    plot = scatter_grid(panels(scores, log_freq, table, frames), out / "desiderata.png",
                        f"{name}: PLL desiderata ({len(sentences)} sentences, {len(words)} words)")
    report = {
        "task": "desiderata", "sentences": name, "n_sentences": len(sentences), "n_words": len(words),
        "multi_token_words": {model: multi_token_share(s.tokenizer, words)
                              for model, s in (("masked", next(iter(masked.values()))), ("causal", causal)) if s},
        "signature": signature(TOOL, sentences=name, n=len(sentences), words=len(words), wordfreq=language,
                               frames=",".join(frames.values())),
        "scorers": {label: s.signature for label, s in scorers.items()},
        "variants": table, "outputs": {"plot": str(plot)},
    }
    if {"word_l2r", "original"} <= set(masked):
        report["word_l2r_beats_original"] = {**verdicts(table), "paper": PAPER}
    columns = ["length", *(f"frequency.{f}" for f in frames), "causal", "seconds"]
    write_report(out, report, columns, f"{name}: PLL desiderata (Pearson r; higher is better)", key="variants")
    return report


def panels(scores: Mapping[str, DesiderataScores], log_freq, table, frames) -> dict[str, dict[str, tuple]]:
    """The scatter grid: one row per desideratum, one column per variant."""
    rows: dict[str, dict[str, tuple]] = {"(a) length": {}, **{f"(b) {f}": {} for f in frames}, "(c) causal LL": {}}
    for label, s in scores.items():
        rows["(a) length"][label] = (s.tokens, -s.sentence, table[label]["length"], "tokens", "−score")
        for f in frames:
            rows[f"(b) {f}"][label] = (log_freq, s.words[f], table[label]["frequency"][f], "log10 freq (Zipf)",
                                       "word score")
        if label != "ll" and "ll" in scores:
            rows["(c) causal LL"][label] = (scores["ll"].sentence, s.sentence, table[label]["causal"], "LL", "PLL")
    return {row: cells for row, cells in rows.items() if cells}
