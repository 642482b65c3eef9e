"""Add LM score columns to every hypothesis and write the lists back, with a (P)PPL table (``task=score``)."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from ..engine import BoundScorer, ScoredTexts
from ..report import ScoredSetReport, Scoring, write_report
from ..types import NBest
from ..version import TOOL
from ..outdir import OutDir, RunDir, run_dir
from .outputs import checked_out_dir, write_scored
from .scoring import check_contexts, score_nbest, set_perplexities


def score_sets(sets: Mapping[str, NBest], scorers: Mapping[str, BoundScorer], out_dir: str | Path | OutDir,
               data: str) -> Scoring:
    """Score every set with every scorer, write the scored lists, report cost and (P)PPL per scorer."""
    target = checked_out_dir(out_dir, sets, scorers)
    check_contexts(sets, scorers, tuning=False)
    results = {name: score_nbest(nbest, scorers) for name, nbest in sets.items()}
    with run_dir(target) as out:
        report = score_report(sets, results, scorers, out, data)
        columns = [c for column in scorers for c in (f"scorers.{column}.rows", f"scorers.{column}.seconds",
                                                     f"scorers.{column}.ppl.input_1best.word_ppl",
                                                     f"scorers.{column}.ppl.ref.word_ppl")]
        write_report(out.work, report.to_json(), ["utterances", "hypotheses", *columns], f"{data}: LM scores added")
    return report


def score_report(sets: Mapping[str, NBest], results: Mapping[str, tuple[NBest, dict[str, ScoredTexts]]],
                 scorers: Mapping[str, BoundScorer], out: RunDir, data: str) -> Scoring:
    """Write each scored set under ``out`` and return the report: cost and (P)PPL per set and scorer."""
    entries = {}
    for name, nbest in sets.items():
        scored, scores = results[name]
        written = write_scored(scored, out, name)
        entry = ScoredSetReport(format=nbest.fmt, utterances=len(nbest), hypotheses=nbest.num_hypotheses,
                                outputs={k: out.shown(v) for k, v in written.items()}, scorers={})
        for column, scorer in scorers.items():
            stats = scores[column].stats
            entry.scorers[column] = {
                "texts": stats.sentences, "cached": stats.cached, "rows": stats.rows_computed,
                "seconds": stats.seconds, "ppl": set_perplexities(nbest, scorer, scores[column], "input_1best")}
        entries[name] = entry
    return Scoring(task="score", data=data, signature=TOOL, scorers={c: s.signature for c, s in scorers.items()},
                   sets=entries)
