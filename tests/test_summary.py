"""The lines a person reads first: headlines per set, compact marked examples, where outputs are, how to apply."""
from __future__ import annotations

import pytest

from rescorer.changes import changed
from rescorer.changes import marked
from rescorer.report.summary import CONTEXT, example_lines, headline, summary


@pytest.mark.parametrize("ref, hyp, shown", [
    ("FRANCIS XAVIER WAS BORN IN THE CASTLE OF XAVIER", "FRANCIS XAVIOUR WAS BORN IN THE CASTLE OF XAVIER",
     "FRANCIS [XAVIER→XAVIOUR] WAS BORN IN …"),
    ("a b c d e f g h i j k", "a b c d e x g h i j k", "… c d e [f→x] g h i …"),
    ("a b", "a b c", "a b [+c]"),
    ("a b c", "b c", "[-a] b c"),
    ("one", "", "[-one]"),
    ("a b c d e f g h i j k l", "a b x y e f g h i j k z", "a b [c→x] [d→y] e f g … i j k [l→z]"),
    ("a b c", "a b c", "= reference"),
])
def test_examples_mark_each_difference_and_cut_long_unchanged_stretches(ref, hyp, shown):
    assert marked(ref, hyp, CONTEXT) == shown


def test_headline_states_before_after_relative_change_and_counts():
    entry = {"utterances": 300, "changed_1best": 25, "references": True, "baseline": {"wer": 1.37},
             "rescored": {"wer": 1.31}, "change": "no significant change", "ci95": {"low": -0.21, "high": 0.1},
             "better": 12, "worse": 10, "same": 3}
    assert headline("test", entry, "wer", "percent") == (
        "test: WER 1.37% → 1.31% (-4.4% relative), 95% CI of the change -0.21 to +0.10: no significant change; "
        "25 of 300 1-bests changed: 12 better, 10 worse, 3 same")


def test_a_set_without_references_is_counted_not_judged():
    entry = {"utterances": 4, "changed_1best": 1, "references": False}
    changes = changed(["u1", "u2"], ["a b", "c"], ["a c", "c"], None)
    report = {"metric": "wer", "units": "percent", "sets": {"new": entry}}
    lines = summary(report, {"new": changes}, "out", "out/tuned.yaml")
    assert lines[0] == "new: 1 of 4 1-bests changed (no references: not judged)"
    assert lines[1] == "  changed 1-bests, without references: [before→after], [-left out], [+added]"
    assert lines[2] == "  u1: a [b→c]" == example_lines(changes)[1]  # the arrow says before → after here
    assert lines[-1].startswith("Apply the tuned rescorer to new lists: rescorer task=apply task.tuned=out/tuned.yaml")
