"""What a run reports, in one place: the report as types (:mod:`.data`: ``report.json``), written as JSON, Markdown
and a terminal table (:mod:`.write`), as an HTML page (:mod:`.html`), as plots (:mod:`.plots`) and as the
terminal's closing summary (:mod:`.summary`)."""
from .data import (EvaluatedSet, Evaluation, Interval, Report, ScoredSetReport, Scoring, SearchSummary,
                   SetReport)
from .write import write_report

__all__ = ["EvaluatedSet", "Evaluation", "Interval", "Report", "ScoredSetReport", "Scoring", "SearchSummary",
           "SetReport", "write_report"]
