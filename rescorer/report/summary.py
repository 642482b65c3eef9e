"""What a person reads first after a rescoring run: per set one headline (metric before → after, the change in
words, how many 1-bests changed and whether for the better), a few changed examples, where the outputs are and
the command that applies the tuned rescorer to new lists."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..changes import Change, examples, marked
from ..safetext import number

EXAMPLES = 3
SHORT = 25   # words: examples are taken from the changed utterances this short, where there are some
CONTEXT = 3  # unchanged words kept on each side of a difference in an example
EXAMPLE_SETS = 3  # sets whose examples are shown (report.html has every change)


def headline(name: str, entry: Mapping[str, Any], metric: str, units: str) -> str:
    """``test_clean: WER 1.37 → 1.31 (−4.4% relative), no significant change; 25 of 300 1-bests changed: …``."""
    changed = f"{entry['changed_1best']} of {entry['utterances']} 1-bests changed"
    if not entry.get("references", "rescored" in entry) or "rescored" not in entry:
        return f"{name}: {changed} (no references: not judged)"
    before, after = entry["baseline"][metric], entry["rescored"][metric]
    relative = f" ({100 * (after - before) / before:+.1f}% relative)" if before else ""
    shown = "%" if units == "percent" else ""
    counts = ", ".join(f"{entry.get(k, 0)} {k}" for k in ("better", "worse", "same"))
    ci = entry.get("ci95", {})
    low, high = (number(ci[k], "+.2f") for k in ("low", "high")) if "low" in ci else ("", "")
    interval = f", 95% CI of the change {low} to {high}" if "low" in ci else ""
    return (f"{name}: {metric.upper()} {before:.2f}{shown} → {after:.2f}{shown}{relative}{interval}: "
            f"{entry['change']}; {changed}: {counts}")


def example_lines(changes: Sequence[Change], k: int = EXAMPLES) -> list[str]:
    """A few changed utterances, each word difference marked ``[reference→hypothesis]`` (``[-w]`` left out,
    ``[+w]`` inserted); without references, the change itself ``[before→after]``."""
    lines = []
    short = [c for c in changes if len(c.after.split()) <= SHORT] or list(changes)
    if any(c.ref is None for c in short):  # the arrows mean another thing than in a labelled run: say which
        lines.append("  changed 1-bests, without references: [before→after], [-left out], [+added]")
    for change in examples(short, k):
        if change.ref is None:
            lines.append(f"  {change.id}: {marked(change.before, change.after, CONTEXT, change.view)}")
            continue
        lines += [f"  {change.id} ({change.verdict}):",
                  f"    before: {marked(change.ref, change.before, CONTEXT, change.view)}",
                  f"    after:  {marked(change.ref, change.after, CONTEXT, change.view)}"]
    return lines


def summary(report: Mapping[str, Any], changes: Mapping[str, Sequence[Change]], outputs: str,
            tuned_file: str | None, shown: int | None = None) -> list[str]:
    """The lines printed after the table and put at the top of ``report.md``: a headline for each of the first
    ``shown`` sets (all by default), examples of the first :data:`EXAMPLE_SETS` of them, the notes and warnings,
    where the ``outputs`` are, and how to apply a ``tuned_file``."""
    lines = []
    for k, (name, entry) in enumerate(list(report["sets"].items())[:shown]):
        lines.append(headline(name, entry, report["metric"], report.get("units", "")))
        lines += example_lines(changes.get(name, ())) if k < EXAMPLE_SETS else []
    lines += [f"Note: {note}" for note in report.get("notes", ())]
    lines += [f"Warning: {warning}" for warning in report.get("warnings", ())]
    lines.append(outputs)
    if tuned_file:
        lines.append(f"Apply the tuned rescorer to new lists: rescorer task=apply task.tuned={tuned_file} "
                     "data=own data.sets.test.nbest=YOUR_LIST")
    return lines
