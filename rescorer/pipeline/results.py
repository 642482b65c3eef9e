"""What a run writes beside its re-ranked sets under ``out_dir``: ``tuned.yaml``, the weight plot and the reports
(``report.json``, ``.md``, ``.html``)."""
from __future__ import annotations

from typing import Mapping, Sequence

from ..changes import Change
from ..combine import SearchResult
from ..context import Context
from ..files import write_text
from ..report.html import write_html
from ..metrics import Metric
from ..report.plots import unplotted, weight_plot
from ..report import write_report
from ..report.summary import summary
from ..outdir import RunDir
from ..report import Report
from .tuned import FILE as TUNED_FILE, Tuned


def write_run(out: RunDir, report: Report, changes: Mapping[str, Sequence[Change]], metric: Metric, tuned: Tuned,
              title: str, result: SearchResult | None, outputs: str | None = None, shown: int | None = None) -> None:
    """What a run writes beside its sets (written already under ``out``): ``tuned.yaml``, the weight plot (a tuning
    run's ``result``) and the reports, whose table and summary show the first ``shown`` sets (report.md and
    report.html have them all) and say where the ``outputs`` are; ``report`` gains where each file went."""
    plot = None
    if result is not None and report.search is not None:
        names = [c.name for c in tuned.columns]
        plot = weight_plot(result, names, metric, out.path(f"weights_{tuned.tuned_on}.png"), context_labels(tuned))
        report.search.plot, report.search.plot_note = out.shown(plot) if plot else None, unplotted(result, names)
    write_text(out.work / TUNED_FILE, tuned.to_yaml(out.final / TUNED_FILE))
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
                                                                report.tuned_file if result else None, shown),
                 shown=shown)


def context_labels(tuned: Tuned) -> dict[str, str]:
    """Plot labels of the columns whose scorer reads a context: the column and how many utterances it reads."""
    labels = {}
    for name, entry in tuned.scorers.items():
        context = Context.of((entry.get("spec") or {}).get("context"))
        if context is not None:
            labels[name] = f"{name} (previous {context.utterances} utterances)"
    return labels
