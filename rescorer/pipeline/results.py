"""What a run writes beside its re-ranked sets under ``out_dir``: ``tuned.yaml``, a tuning run's weight plot and
the reports (``report.json``, ``.md``, ``.html``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from ..changes import Change
from ..combine import SearchResult
from ..engine import BoundScorer
from ..files import write_text
from ..report.html import write_html
from ..metrics import Metric
from ..report.plots import unplotted, weight_plot
from ..report import write_report
from ..report.summary import summary
from ..outdir import RunDir
from ..report import Report, SearchSummary
from ..tuned.file import FILE as TUNED_FILE


@dataclass(frozen=True)
class Tuning:
    """What a tuning run adds to the report of applying its weights: the search (``result``, and ``search`` as the
    report shows it), the half-splits study (``halves``), the set tuned on (``on``) and the labels of the weight
    plot's columns whose scorer reads context."""

    result: SearchResult
    search: SearchSummary
    on: str
    halves: Optional[dict[str, Any]] = None
    labels: Mapping[str, str] = field(default_factory=dict)


def write_run(out: RunDir, report: Report, changes: Mapping[str, Sequence[Change]], metric: Metric, title: str,
              tuned_text: str, tuning: Tuning | None = None, outputs: str | None = None,
              shown: int | None = None) -> None:
    """What a run writes beside its sets (written already under ``out``): ``tuned.yaml`` (``tuned_text``), a
    tuning run's weight plot and the reports, whose table and summary show the first ``shown`` sets (report.md and
    report.html have them all) and say where the ``outputs`` are; ``report`` gains where each file went."""
    plot = None
    if tuning is not None and report.search is not None:
        names = list(tuning.result.weights)
        plot = weight_plot(tuning.result, names, metric, out.path(f"weights_{tuning.on}.png"), tuning.labels)
        report.search.plot, report.search.plot_note = out.shown(plot) if plot else None, unplotted(tuning.result, names)
    write_text(out.work / TUNED_FILE, tuned_text)
    report.tuned_file = str(out.final / TUNED_FILE)
    report.html = str(out.final / "report.html")
    written = report.to_json()
    write_html(out.work / "report.html", written, changes, plot.read_bytes() if plot else None)
    name = metric.name.upper()
    judged = [(f"baseline.{metric.name}", f"{name} before"), (f"rescored.{metric.name}", f"{name} after"),
              (f"oracle.{metric.name}", "best possible (oracle)"), ("ci95.low", "95% CI low"),
              ("ci95.high", "95% CI high")] if any(e.references for e in report.sets.values()) else []
    table = [("utterances", "utterances"), *judged, ("changed_1best", "1-bests changed")]
    outputs = outputs or (f"Outputs in {out.final}/: report.html (every change, side by side), report.md, "
                          "<set>/1best.txt and each list re-ranked in its own format.")
    write_report(out.work, written, table, title, notes=summary(written, changes, outputs,
                                                                report.tuned_file if tuning else None, shown),
                 shown=shown)


def context_labels(scorers: Mapping[str, BoundScorer]) -> dict[str, str]:
    """Plot labels of the columns whose scorer reads a context: the column and how many utterances it reads."""
    return {name: f"{name} (previous {scorer.context.utterances} utterances)"
            for name, scorer in scorers.items() if scorer.context is not None}
