"""The input 1-best and oracle WER/BLEU of every set (``task=evaluate``)."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from ..log import warning as warn
from ..metrics import Metric, NBestStats
from ..report import EvaluatedSet, Evaluation, write_report
from ..types import NBest
from ..version import TOOL, signature
from ..outdir import OutDir, run_dir
from .outputs import checked_out_dir


def evaluate(sets: Mapping[str, NBest], metric: Metric, out_dir: str | Path | OutDir, data: str) -> Evaluation:
    """Baseline and oracle of each set; writes ``report.{json,md}`` under ``out_dir`` and returns the report."""
    target = checked_out_dir(out_dir, sets, {})
    entries = {}
    for name, nbest in sets.items():
        for mismatch in metric.mismatches(nbest.refs(), nbest.select([0] * len(nbest))):
            warn(f"{name}: {mismatch}")
        stats = NBestStats.compute(nbest, metric)
        entries[name] = EvaluatedSet(
            format=nbest.fmt, path=nbest.source, utterances=len(nbest), hypotheses=nbest.num_hypotheses,
            columns=nbest.columns, baseline={metric.name: metric.scale * stats.score(stats.baseline_ranks())},
            oracle={metric.name: metric.scale * stats.score(stats.oracle_ranks())})
    report = Evaluation(task="evaluate", data=data, metric=metric.name, units=metric.units,
                        signature=signature(TOOL, metric.signature), sets=entries)
    columns = ["utterances", "hypotheses", f"baseline.{metric.name}", f"oracle.{metric.name}"]
    with run_dir(target) as out:
        write_report(out.work, report.to_json(), columns, f"{data}: input 1-best and oracle {metric.name.upper()}")
    return report
