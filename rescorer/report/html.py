"""report.html: one self-contained page (inline CSS and JS, the plot as a data URI, nothing fetched) with each
set's numbers, the weight curve and every changed 1-best, its words coloured against the reference."""
from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..changes import VERDICTS, Change, word_marks
from ..files import write_text
from ..safetext import for_html, number

SHOWN = ("better", "worse", "same")  # filter buttons always offered; "unknown" only when a set has one

CSS = """
:root { --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; --soft: #f6f8fa; --good: #1a7f37; --bad: #cf222e; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff; line-height: 1.5;
       font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1120px; margin: 0 auto; padding: 24px 32px 64px; }
h1 { font-size: 26px; margin: 0 0 4px; } h2 { font-size: 20px; margin: 40px 0 8px; }
h3 { font-size: 16px; margin: 24px 0 8px; }
.tag { font-size: 13px; font-weight: normal; color: var(--muted); margin-left: 8px; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 12px 0; }
dl.meta dt { color: var(--muted); } dl.meta dd { margin: 0; }
nav { font-size: 14px; margin: 8px 0; } nav a { color: #0969da; margin-right: 12px; }
code { font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; word-break: break-all; }
figure { margin: 16px 0; } figure img { max-width: 100%; border: 1px solid var(--line); border-radius: 6px; }
figcaption { color: var(--muted); font-size: 13px; }
table.numbers { border-collapse: collapse; margin: 8px 0 4px; }
table.numbers th, table.numbers td { border: 1px solid var(--line); padding: 6px 12px; }
table.numbers th { background: var(--soft); font-weight: 600; font-size: 13px; white-space: nowrap; }
table.numbers caption { caption-side: top; text-align: left; color: var(--muted); font-size: 13px;
                        padding-bottom: 4px; }
table.numbers td { text-align: right; font-variant-numeric: tabular-nums; }
table.numbers td.words { text-align: left; }
.note { color: var(--muted); font-size: 13px; margin: 4px 0; }
.legend .sub, .legend .ins, .legend .del { margin: 0 6px; }
.filter { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; margin: 8px 0; }
.filter button { font: inherit; font-size: 13px; padding: 3px 12px; border: 1px solid var(--line);
                 border-radius: 14px; background: #fff; cursor: pointer; }
.filter button[aria-pressed="true"] { background: var(--ink); color: #fff; border-color: var(--ink); }
.filter .shown { color: var(--muted); font-size: 13px; margin-left: 8px; }
ol.list { list-style: none; padding: 0; margin: 0; }
li.change { border: 1px solid var(--line); border-left-width: 4px; border-radius: 6px; padding: 8px 12px;
            margin: 8px 0; }
li.better { border-left-color: var(--good); } li.worse { border-left-color: var(--bad); }
li.same { border-left-color: #8c959f; } li.unknown { border-left-color: #0969da; }
.changes:not([data-filter="all"]) li.change { display: none; }
.changes[data-filter="better"] li.better, .changes[data-filter="worse"] li.worse,
.changes[data-filter="same"] li.same, .changes[data-filter="unknown"] li.unknown { display: block; }
.top { display: flex; gap: 12px; align-items: baseline; margin-bottom: 4px; }
.top .id { font-weight: 600; font-size: 13px; } .top .score { color: var(--muted); font-size: 13px; }
.badge { font-size: 12px; padding: 0 8px; border-radius: 10px; color: #fff; background: #8c959f; }
.badge.better { background: var(--good); } .badge.worse { background: var(--bad); }
.badge.unknown { background: #0969da; }
.row { display: grid; grid-template-columns: 88px 1fr; gap: 8px; }
.row .lab { color: var(--muted); font-size: 13px; padding-top: 1px; } .row .txt { overflow-wrap: anywhere; }
.sub { background: #fff1c2; border-bottom: 2px solid #d4a72c; }
ins.ins { background: #ddf4ff; border-bottom: 2px solid #0969da; text-decoration: none; }
del.del { background: #ffebe9; color: var(--bad); text-decoration: line-through; }
.sub, ins.ins, del.del { padding: 0 2px; border-radius: 3px; }
"""

JS_HEAD = """window.addEventListener('error', function (e) {
  var d = document.documentElement.dataset; d.errors = (d.errors ? d.errors + ' | ' : '') + e.message;
});"""

JS_BODY = """(function () {
  function show(box, verdict) {
    box.dataset.filter = verdict;
    box.querySelectorAll('button[data-show]').forEach(function (b) {
      b.setAttribute('aria-pressed', String(b.dataset.show === verdict));
    });
    var all = box.querySelectorAll('li.change').length;
    var n = verdict === 'all' ? all : box.querySelectorAll('li.change.' + verdict).length;
    box.querySelector('.shown').textContent = 'showing ' + n + ' of ' + all;
  }
  var start = (location.hash.match(/^#show=(\\w+)$/) || [])[1] || 'all';
  document.querySelectorAll('.changes').forEach(function (box) {
    box.addEventListener('click', function (e) {
      var b = e.target.closest('button[data-show]');
      if (b) { show(box, b.dataset.show); }
    });
    show(box, box.querySelector('button[data-show="' + start + '"]') ? start : 'all');
  });
  document.documentElement.dataset.ready = 'yes';
})();"""


def words(ref: str, hyp: str, against: str = "reference", view: str = "") -> str:
    """``hyp`` as HTML, its words marked against ``ref`` (named ``against`` in tooltips): substituted, inserted,
    and ``ref`` words left out, compared as the metric's ``view`` compares them."""
    where = for_html(against)
    html = {"equal": "{b}", "substitute": f'<span class="sub" title="{where}: {{a}}">{{b}}</span>',
            "insert": '<ins class="ins" title="added">{b}</ins>', "delete": '<del class="del" title="left out">{a}</del>'}
    out = [html[op].format(a=for_html(a or ""), b=for_html(b or "")) for op, a, b in word_marks(ref, hyp, view)]
    return " ".join(out) or '<span class="note">(empty)</span>'


def _number(value: Any) -> str:
    return number(value) if isinstance(value, float) else for_html(str(value))


def numbers_table(entry: Mapping[str, Any], metric: str) -> str:
    """The set's numbers, one column per number the report has (none without a reference)."""
    unit = {"wer": "WER in percent, lower is better", "bleu": "BLEU, higher is better"}.get(metric, metric.upper())
    cells: list[tuple[str, str, str]] = []  # (header, tooltip, html)

    def add(label: str, tip: str, value: Any, text: bool = False) -> None:
        if value is not None and value != "":
            cells.append((label, tip, f'<td{" class=words" if text else ""}>{_number(value)}</td>'))

    add("utterances", "utterances in the set", entry.get("utterances"))
    for key, label, tip in (("baseline", "before", "the input 1-best"), ("rescored", "after", "the rescored 1-best"),
                            ("oracle", "best possible (oracle)", "the best hypothesis of every N-best list")):
        value = entry.get(key)
        add(label, tip, value.get(metric) if isinstance(value, Mapping) else None)
    ci = entry.get("ci95")
    if isinstance(ci, Mapping) and "low" in ci and "high" in ci:
        interval = f"{number(ci['low'], '+.2f')} to {number(ci['high'], '+.2f')}"
        add("95% interval of after − before", "paired bootstrap", interval)
    add("change", "the change in words, from the interval", entry.get("change"), text=True)
    add("1-best changed", "utterances whose 1-best text changed", entry.get("changed_1best"))
    if not cells:
        return '<p class="note">No numbers for this set.</p>'
    scored = any(k in entry for k in ("baseline", "rescored", "oracle"))
    caption = f"<caption>{for_html(unit)}</caption>" if scored else ""
    head = "".join(f'<th scope="col" title="{for_html(tip)}">{for_html(label)}</th>' for label, tip, _ in cells)
    return f'<table class="numbers">{caption}<thead><tr>{head}</tr></thead><tbody><tr>' \
           f'{"".join(c for *_, c in cells)}</tr></tbody></table>'


def _score(change: Change) -> str:
    if change.before_score is None or change.after_score is None:
        return "no reference"
    if change.metric == "bleu":
        return f"sentence BLEU {change.before_score:.1f} → {change.after_score:.1f}"
    return f"word errors {change.before_score:g} → {change.after_score:g}"


def change_item(change: Change) -> str:
    """One changed utterance: reference, before and after, words marked against the reference (or, without
    one, after against before)."""
    if change.ref is None:
        rows = [("reference", '<span class="note">(none: after is marked against before)</span>'),
                ("before", for_html(change.before) or '<span class="note">(empty)</span>'),
                ("after", words(change.before, change.after, "before", change.view))]
    else:
        rows = [("reference", for_html(change.ref) or '<span class="note">(empty)</span>'),
                ("before", words(change.ref, change.before, view=change.view)),
                ("after", words(change.ref, change.after, view=change.view))]
    verdict = for_html(change.verdict)
    body = "".join(f'<div class="row"><span class="lab">{lab}</span><span class="txt">{text}</span></div>'
                   for lab, text in rows)
    return (f'<li class="change {verdict}"><div class="top"><span class="id">{for_html(change.id)}</span>'
            f'<span class="badge {verdict}">{verdict}</span><span class="score">{for_html(_score(change))}</span>'
            f"</div>{body}</li>")


def changes_block(changes: Sequence[Change]) -> str:
    """Every changed utterance with a filter by verdict and the counts (verdicts only where there are references
    to judge by)."""
    if not changes:
        return '<p class="note">No 1-best changed.</p>'
    counts = {v: sum(c.verdict == v for c in changes) for v in VERDICTS}
    judged = any(c.ref is not None for c in changes)
    offered = [v for v in counts if (v in SHOWN and judged) or counts[v]]
    buttons = [f'<button type="button" data-show="all" aria-pressed="true">all ({len(changes)})</button>']
    buttons += [f'<button type="button" data-show="{v}" aria-pressed="false">{v} ({counts[v]})</button>'
                for v in offered]
    items = "\n".join(change_item(c) for c in changes)
    return (f'<div class="changes" data-filter="all"><div class="filter" role="group" aria-label="show">'
            f'{"".join(buttons)}<span class="shown">showing {len(changes)} of {len(changes)}</span></div>'
            f'<ol class="list">\n{items}\n</ol></div>')


def set_section(name: str, entry: Mapping[str, Any], metric: str, changes: Sequence[Change]) -> str:
    tag = '<span class="tag">weights tuned on this set</span>' if entry.get("tuned_on_this_set") else ""
    return (f'<section class="set" id="set-{for_html(name)}"><h2>{for_html(name)}{tag}</h2>'
            f"{numbers_table(entry, metric)}<h3>Changed 1-best</h3>{changes_block(changes)}</section>")


def weights_text(weights: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} = {v:g}" if isinstance(v, (int, float)) else f"{k} = {v}" for k, v in weights.items())


def header(report: Mapping[str, Any], metric: str, sets: Sequence[str]) -> str:
    """Title and what the run was: metric, tuning set, weights, signature; links to the sets."""
    about = {"wer": "WER: word error rate, lower is better", "bleu": "BLEU: higher is better"}.get(metric, metric)
    meta = [("metric", for_html(about)), ("tuned on", for_html(str(report.get("tuned_on") or "")))]
    if report.get("task") == "apply":
        meta.insert(0, ("applied", for_html(f"the tuned rescorer {report.get('tuned') or '(given in Python)'}")))
    if report.get("weights") is not None:
        meta.append(("weights", for_html(weights_text(report["weights"]) or "none")))
    if report.get("signature"):
        meta.append(("signature", f'<code>{for_html(str(report["signature"]))}</code>'))
    rows = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in meta if v)
    links = "".join(f'<a href="#set-{for_html(name)}">{for_html(name)}</a>' for name in sets)
    judged = any((entry or {}).get("references", True) for entry in (report.get("sets") or {}).values())
    against = "Words against the reference" if judged else "Words before → after"
    legend = (f'<p class="note legend">{against}: <span class="sub">substituted</span> '
              '<ins class="ins">inserted</ins> <del class="del">left out</del></p>')
    return f'<h1>{for_html(title(report))}</h1><dl class="meta">{rows}</dl><nav>Sets: {links}</nav>{legend}'


def title(report: Mapping[str, Any]) -> str:
    kind = "Apply report" if report.get("task") == "apply" else "Rescoring report"
    return f"{kind}: {report['data']}" if report.get("data") else kind


def plot(png: bytes | None) -> str:
    if not png:
        return ""
    data = base64.b64encode(png).decode("ascii")
    return (f'<figure><img alt="dev metric against the interpolation weights" src="data:image/png;base64,{data}">'
            "<figcaption>The tuning set's metric against the interpolation weights.</figcaption></figure>")


def html_page(report: Mapping[str, Any], changes: Mapping[str, Sequence[Change]], plot_png: bytes | None) -> str:
    """The whole page: every set of ``report["sets"]`` (then any other set in ``changes``) with its numbers
    and its changed utterances."""
    sets = dict(report.get("sets") or {})
    sets.update({name: {} for name in changes if name not in sets})
    metric = str(report.get("metric") or next((k for e in sets.values() for k in e.get("baseline") or {}), ""))
    body = "\n".join(set_section(name, entry, metric, changes.get(name, ())) for name, entry in sets.items())
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{for_html(title(report))}</title><script>{JS_HEAD}</script><style>{CSS}</style></head>\n"
            f"<body><main>{header(report, metric, list(sets))}{plot(plot_png)}\n{body}</main>"
            f"<script>{JS_BODY}</script></body></html>\n")


def write_html(path: str | Path, report: Mapping[str, Any], changes: Mapping[str, Sequence[Change]],
               plot_png: bytes | None) -> Path:
    """Write the page to ``path`` atomically; return the path."""
    write_text(path, html_page(report, changes, plot_png))
    return Path(path)
