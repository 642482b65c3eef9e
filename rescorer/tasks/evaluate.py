"""``rescorer task=evaluate``: baseline (input 1-best) and oracle WER/BLEU of every set."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import __version__
from ..io.sets import Corpus
from ..metrics import NBestStats, make_metric
from ..report import write_report


def evaluate(corpus: Corpus, out_dir: str | Path) -> dict[str, Any]:
    metric = make_metric(corpus.metric_name, **corpus.metric_options)
    sets = {}
    for name, spec in corpus.sets.items():
        nbest = spec.read()
        stats = NBestStats.compute(nbest, metric)
        scale = 100.0 if metric.name == "wer" else 1.0
        sets[name] = {
            "format": nbest.fmt,
            "path": str(spec.nbest),
            "utterances": len(nbest),
            "hypotheses": nbest.num_hypotheses,
            "columns": nbest.columns,
            "baseline": {metric.name: scale * stats.score(stats.baseline_ranks())},
            "oracle": {metric.name: scale * stats.score(stats.oracle_ranks())},
        }
    report = {
        "task": "evaluate",
        "data": corpus.name,
        "metric": metric.name,
        "units": "percent" if metric.name == "wer" else "BLEU (0-100)",
        "signature": f"rescorer:{__version__}|{metric.signature}",
        "sets": sets,
    }
    columns = ["utterances", "hypotheses", f"baseline.{metric.name}", f"oracle.{metric.name}"]
    write_report(out_dir, report, columns, f"{corpus.name}: input 1-best and oracle {metric.name.upper()}")
    return report


def run(cfg: Any) -> dict[str, Any]:
    from hydra.utils import instantiate

    return evaluate(instantiate(cfg.data, _convert_="all"), cfg.out_dir)
