"""Add LM score columns to every hypothesis and write the lists back, with a (P)PPL table (``task=score``)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ..engine import BoundScorer
from ..report import write_report
from ..types import NBest
from ..version import __version__
from .outputs import write_scored
from .scoring import score_nbest, set_perplexities


def score_sets(sets: Mapping[str, NBest], scorers: Mapping[str, BoundScorer], out_dir: str | Path,
               data: str) -> dict[str, Any]:
    """Score every set with every scorer, write the scored lists, report cost and (P)PPL per scorer."""
    out = Path(out_dir)
    entries = {}
    for name, nbest in sets.items():
        scored, scores = score_nbest(nbest, scorers)
        entry: dict[str, Any] = {"format": nbest.fmt, "utterances": len(nbest), "hypotheses": nbest.num_hypotheses,
                                 "outputs": write_scored(scored, out, name), "scorers": {}}
        for column, scorer in scorers.items():
            stats = scores[column].stats
            entry["scorers"][column] = {
                "texts": stats.sentences, "cached": stats.cached, "rows": stats.rows_computed,
                "seconds": stats.seconds, "ppl": set_perplexities(nbest, scorer, scores[column], "input_1best")}
        entries[name] = entry
    report = {"task": "score", "data": data, "signature": f"rescorer:{__version__}",
              "scorers": {c: s.signature for c, s in scorers.items()}, "sets": entries}
    columns = [c for column in scorers for c in (f"scorers.{column}.rows", f"scorers.{column}.seconds",
                                                 f"scorers.{column}.ppl.input_1best.word_ppl",
                                                 f"scorers.{column}.ppl.ref.word_ppl")]
    write_report(out, report, ["utterances", "hypotheses", *columns], f"{data}: LM scores added")
    return report
