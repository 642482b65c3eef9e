"""report.html: one self-contained page (inline CSS and JS, the plot as a data URI, nothing fetched) with each
set's numbers, the weight curve and every changed 1-best, its words coloured against the reference. The markup is
``templates/report.html.j2``; this module gives it the page's texts and numbers as plain values, which Jinja2
escapes (controls made visible first), so no text from an input can become markup."""
from __future__ import annotations

import base64
from functools import lru_cache
from pathlib import Path
from collections.abc import Sequence
from typing import Any, Iterator, Mapping

import jinja2
from markupsafe import Markup

from ..changes import VERDICTS, Change, word_marks
from ..files import write_lines
from ..safetext import number, visible

SHOWN = ("better", "worse", "same")  # filter buttons always offered; "unknown" only when a set has one
Marks = list[tuple[str, str, str]]  # (op, reference word, word), as changes.word_marks gives them


def shown(value: Any) -> Any:
    """What the page writes for a ``{{ value }}``: its text with every control character made visible (Jinja2
    then escapes it); the template's own markup (a macro's output) as it is."""
    return value if isinstance(value, Markup) else visible(value)


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("rescorer.report"), autoescape=True, finalize=shown,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                              keep_trailing_newline=True)


def marks(ref: str, hyp: str, view: str = "") -> Marks:
    """``hyp``'s words marked against ``ref``, compared as the metric's ``view`` compares them."""
    return [(op, a or "", b or "") for op, a, b in word_marks(ref, hyp, view)]


def plain(text: str) -> Marks:
    """``text`` as it is: one unmarked run (none when it is empty, which the page shows as such)."""
    return [("equal", "", text)] if text else []


def shown_number(value: Any) -> str:
    return number(value) if isinstance(value, float) else str(value)


def number_cells(entry: Mapping[str, Any], metric: str) -> list[dict[str, Any]]:
    """The set's numbers, one cell per number the report has (none without a reference)."""
    cells: list[dict[str, Any]] = []

    def add(label: str, tip: str, value: Any, words: bool = False) -> None:
        if value is not None and value != "":
            cells.append({"label": label, "tip": tip, "text": shown_number(value), "words": words})

    add("utterances", "utterances in the set", entry.get("utterances"))
    for key, label, tip in (("baseline", "before", "the input 1-best"), ("rescored", "after", "the rescored 1-best"),
                            ("oracle", "best possible (oracle)", "the best hypothesis of every N-best list")):
        value = entry.get(key)
        add(label, tip, value.get(metric) if isinstance(value, Mapping) else None)
    ci = entry.get("ci95")
    if isinstance(ci, Mapping) and "low" in ci and "high" in ci:
        interval = f"{number(ci['low'], '+.2f')} to {number(ci['high'], '+.2f')}"
        add("95% interval of after − before", "paired bootstrap", interval)
    add("change", "the change in words, from the interval", entry.get("change"), words=True)
    add("1-best changed", "utterances whose 1-best text changed", entry.get("changed_1best"))
    return cells


def score_text(change: Change) -> str:
    if change.before_score is None or change.after_score is None:
        return "no reference"
    if change.metric == "bleu":
        return f"sentence BLEU {change.before_score:.1f} → {change.after_score:.1f}"
    return f"word errors {change.before_score:g} → {change.after_score:g}"


def change_item(change: Change) -> dict[str, Any]:
    """One changed utterance: reference, before and after, words marked against the reference (or, without
    one, after against before: the reference row is then None)."""
    if change.ref is None:
        rows = [("reference", None), ("before", plain(change.before)),
                ("after", marks(change.before, change.after, change.view))]
    else:
        rows = [("reference", plain(change.ref)), ("before", marks(change.ref, change.before, change.view)),
                ("after", marks(change.ref, change.after, change.view))]
    return {"id": change.id, "verdict": change.verdict, "score": score_text(change), "rows": rows,
            "against": "before" if change.ref is None else "reference"}


def offered(changes: Sequence[Change]) -> list[tuple[str, int]]:
    """The verdicts to filter by, with their counts (verdicts only where there are references to judge by)."""
    counts = {v: sum(c.verdict == v for c in changes) for v in VERDICTS}
    judged = any(c.ref is not None for c in changes)
    return [(v, n) for v, n in counts.items() if (v in SHOWN and judged) or n]


def set_section(name: str, entry: Mapping[str, Any], metric: str, changes: Sequence[Change]) -> dict[str, Any]:
    unit = {"wer": "WER in percent, lower is better", "bleu": "BLEU, higher is better"}.get(metric, metric.upper())
    scored = any(k in entry for k in ("baseline", "rescored", "oracle"))
    return {"name": name, "tuned_here": bool(entry.get("tuned_on_this_set")), "caption": unit if scored else "",
            "cells": number_cells(entry, metric), "changes": ChangeItems(changes), "offered": offered(changes),
            "changed": max(int(entry.get("changed_1best") or 0), len(changes))}


class ChangeItems(Sequence):
    """Each change as :func:`change_item` shows it, made as the page is written: the page of thousands of changes
    never holds all of them at once."""

    def __init__(self, changes: Sequence[Change]):
        self.changes = changes

    def __len__(self) -> int:
        return len(self.changes)

    def __getitem__(self, at: int) -> dict[str, Any]:  # type: ignore[override]
        return change_item(self.changes[at])


def weights_text(weights: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} = {v:g}" if isinstance(v, (int, float)) else f"{k} = {v}" for k, v in weights.items())


def meta(report: Mapping[str, Any], metric: str) -> list[tuple[str, str]]:
    """What the run was: metric, tuning set and weights (the signature has its own row)."""
    about = {"wer": "WER: word error rate, lower is better", "bleu": "BLEU: higher is better"}.get(metric, metric)
    rows = [("metric", about), ("tuned on", str(report.get("tuned_on") or ""))]
    if report.get("task") == "apply":
        rows.insert(0, ("applied", f"the tuned rescorer {report.get('tuned') or '(given in Python)'}"))
    if report.get("weights") is not None:
        rows.append(("weights", weights_text(report["weights"]) or "none"))
    return [(label, text) for label, text in rows if text]


def title(report: Mapping[str, Any]) -> str:
    kind = "Apply report" if report.get("task") == "apply" else "Rescoring report"
    return f"{kind}: {report['data']}" if report.get("data") else kind


def data_uri(png: bytes | None) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii") if png else ""


def html_page(report: Mapping[str, Any], changes: Mapping[str, Sequence[Change]], plot_png: bytes | None) -> str:
    """The whole page: every set of ``report["sets"]`` (then any other set in ``changes``) with its numbers
    and its changed utterances."""
    return "".join(html_parts(report, changes, plot_png))


def html_parts(report: Mapping[str, Any], changes: Mapping[str, Sequence[Change]],
               plot_png: bytes | None) -> Iterator[str]:
    """:func:`html_page` a part at a time, as the template makes it."""
    sets = dict(report.get("sets") or {})
    sets.update({name: {} for name in changes if name not in sets})
    metric = str(report.get("metric") or next((k for e in sets.values() for k in e.get("baseline") or {}), ""))
    judged = any((entry or {}).get("references", True) for entry in (report.get("sets") or {}).values())
    return environment().get_template("report.html.j2").generate(
        title=title(report), meta=meta(report, metric), signature=str(report.get("signature") or ""),
        judged=judged, plot=data_uri(plot_png),
        sets=[set_section(name, entry, metric, changes.get(name, ())) for name, entry in sets.items()])


def write_html(path: str | Path, report: Mapping[str, Any], changes: Mapping[str, Sequence[Change]],
               plot_png: bytes | None) -> Path:
    """Write the page to ``path`` atomically, a part at a time; return the path."""
    write_lines(path, html_parts(report, changes, plot_png))
    return Path(path)
