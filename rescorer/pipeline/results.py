"""A run's results written together under ``out_dir`` (all or nothing): each set re-ranked in its own format, as
JSONL and as 1-best text, ``tuned.yaml``, the weight plot and the reports (``report.json``, ``.md``, ``.html``)."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from ..combine import SearchResult
from ..context import Context
from ..files import write_text
from ..report.html import write_html
from ..metrics import Metric
from ..report.plots import unplotted, weight_plot
from ..report import write_report
from ..report.summary import summary
from ..types import CANONICAL
from .outputs import ONE_BEST, OutDir, RunDir, run_dir, write_1best, write_scored, write_toolkit_1best
from ..report import Report
from .rerank import Applied
from .tuned import FILE as TUNED_FILE, Tuned


def write_results(out_dir: OutDir, report: Report, applied: Mapping[str, Applied], metric: Metric, tuned: Tuned,
                  title: str, result: SearchResult | None) -> None:
    """Every set's outputs, ``tuned.yaml``, the weight plot (a tuning run's ``result``) and the reports, written to
    ``out_dir`` together; ``report`` gains where each went."""
    changes = {name: a.changes for name, a in applied.items()}
    with run_dir(out_dir) as out:
        for name, a in applied.items():
            a.entry.outputs = write_rescored(a, out, name, metric)
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
        table = [("utterances", "utterances"), (f"baseline.{metric.name}", f"{name} before"),
                 (f"rescored.{metric.name}", f"{name} after"), (f"oracle.{metric.name}", "best possible (oracle)"),
                 ("ci95.low", "95% CI low"), ("ci95.high", "95% CI high"), ("changed_1best", "1-bests changed")]
        write_report(out.work, written, table, title, notes=summary(written, changes, str(out.final),
                                                                    report.tuned_file if result else None))


def context_labels(tuned: Tuned) -> dict[str, str]:
    """Plot labels of the columns whose scorer reads a context: the column and how many utterances it reads."""
    labels = {}
    for name, entry in tuned.scorers.items():
        context = Context.of((entry.get("spec") or {}).get("context"))
        if context is not None:
            labels[name] = f"{name} (previous {context.utterances} utterances)"
    return labels


def write_rescored(applied: Applied, out: RunDir, name: str, metric: Metric) -> dict[str, str]:
    """The re-ranked set in its format, as JSONL and as 1-best text (with ids for ASR); where each will be. A canonical
    JSONL set is written as it is re-ranked, a block at a time: its re-ranked list is never whole in memory."""
    streamed = applied.scored.nbest.fmt == CANONICAL
    nbest = applied.scored.nbest if streamed else applied.nbest()
    written: dict[str, Path] = {**write_scored(nbest, out, name, applied.utterances() if streamed else None),
                                "1best": out.path(name, ONE_BEST)}
    write_1best(nbest, written["1best"], with_ids=metric.name == "wer", best=applied.firsts())
    toolkit = write_toolkit_1best(nbest, out.path(name))  # none for JSONL: its 1-best file is 1best.txt
    if toolkit is not None:
        written["toolkit_1best"] = toolkit
    return {kind: out.shown(path) for kind, path in written.items()}
