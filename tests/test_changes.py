"""Changed 1-best texts: verdicts, word errors, word alignment and the marked one-line rendering."""
from __future__ import annotations

import jiwer
import pytest
from sacrebleu.metrics import BLEU

from rescorer.changes import Change, changed, examples, marked, word_errors, word_ops
from rescorer.errors import ConfigError
from rescorer.metrics import BLEUMetric, WER

PAIRS = [  # (reference, hypothesis, word errors counted by hand)
    ("FRANCIS XAVIOUR WAS BORN", "FRANCIS XAVIER WAS BORN", 1),
    ("a b c", "a x c d", 2),
    ("a b c", "", 3),
    ("", "a b", 2),
    ("", "", 0),
    ("the cat sat", "the cat sat", 0),
    ("one two three four", "two three four five six", 3),
]


@pytest.mark.parametrize("ref,hyp,errors", PAIRS)
def test_word_errors_match_hand_counts_and_jiwer(ref, hyp, errors):
    assert word_errors(ref, hyp) == errors
    out = jiwer.process_words(ref, hyp)
    assert errors == out.substitutions + out.deletions + out.insertions


@pytest.mark.parametrize("transform", ["default", "standardize"])
def test_word_errors_are_the_errors_the_wer_metric_counts(transform):
    refs, hyps = [r for r, _, _ in PAIRS] + ["It's A Test"], [h for _, h, _ in PAIRS] + ["it is a test"]
    stats = WER(transform).segment_stats(refs, hyps)
    assert [word_errors(r, h, transform) for r, h in zip(refs, hyps)] == stats[:, 0].tolist()


@pytest.mark.parametrize("ref,hyp,errors", PAIRS)
def test_word_ops_rebuild_both_texts(ref, hyp, errors):
    ops = word_ops(ref, hyp)
    assert [w for _, r, _ in ops for w in r] == ref.split()
    assert [w for _, _, h in ops for w in h] == hyp.split()
    assert {op for op, _, _ in ops} <= {"equal", "substitute", "insert", "delete"}


def test_word_ops_of_empty_texts():
    assert word_ops("a b", "") == [("delete", ("a", "b"), ())]
    assert word_ops("", "a b") == [("insert", (), ("a", "b"))]
    assert word_ops("", "") == []
    assert word_ops("a b", "a b") == [("equal", ("a", "b"), ("a", "b"))]


def test_marked_shows_substitutions_deletions_and_insertions():
    assert marked("FRANCIS XAVIOUR WAS BORN", "FRANCIS XAVIER WAS BORN") == "FRANCIS [XAVIOUR→XAVIER] WAS BORN"
    assert marked("a b c d", "a c d e") == "a [-b] c d [+e]"
    assert marked("a b", "") == "[-a] [-b]"
    assert marked("", "x") == "[+x]"
    assert marked("same words", "same words") == "same words"


def test_changed_keeps_only_changed_texts_with_verdicts_from_word_errors():
    ids = ["u1", "u2", "u3", "u4", "u5"]
    refs = ["a b c", "a b c", "a b c", "a b c", "a b c"]
    before = ["a b c", "a x c", "a b c", "a x c", "a b"]
    after = ["a b c", "a b c", "a b", "a y c", ""]
    got = {c.id: c for c in changed(ids, before, after, refs, "wer")}
    assert list(got) == ["u2", "u3", "u4", "u5"]
    assert (got["u2"].verdict, got["u2"].before_score, got["u2"].after_score) == ("better", 1, 0)
    assert (got["u3"].verdict, got["u3"].before_score, got["u3"].after_score) == ("worse", 0, 1)
    assert (got["u4"].verdict, got["u4"].before_score, got["u4"].after_score) == ("same", 1, 1)
    assert (got["u5"].verdict, got["u5"].before_score, got["u5"].after_score) == ("worse", 1, 3)
    assert not got["u2"].higher_is_better and got["u2"].gain == 1 and got["u3"].gain == -1


def test_changed_against_an_empty_reference_counts_insertions():
    [change] = changed(["u"], ["a b"], ["a"], [""], "wer")
    assert (change.verdict, change.before_score, change.after_score) == ("better", 2, 1)


def test_an_utterance_without_a_reference_is_unknown():
    changes = changed(["u1", "u2"], ["a", "b"], ["x", "y"], [None, "y"], "wer")
    assert [c.verdict for c in changes] == ["unknown", "better"]
    assert changes[0].before_score is None and changes[0].gain == 0
    assert [c.verdict for c in changed(["u"], ["a"], ["b"], None)] == ["unknown"]


def test_bleu_verdicts_follow_sacrebleu_sentence_bleu():
    refs = ["the cat sat on the mat", "a quick brown fox jumps", "hello world", "one two"]
    before = ["the cat sat on a mat", "a quick brown fox jumps", "hello there world", "one"]
    after = ["the cat sat on the mat", "a quick fox jumps", "hello world there", "two"]
    bleu = BLEU(effective_order=True)
    for change, ref, old, new in zip(changed(["a", "b", "c", "d"], before, after, refs, "bleu"), refs, before, after):
        s0, s1 = bleu.sentence_score(old, [ref]).score, bleu.sentence_score(new, [ref]).score
        assert (change.before_score, change.after_score) == (s0, s1)
        assert change.higher_is_better and change.metric == "bleu"
        assert change.verdict == ("same" if s0 == s1 else "better" if s1 > s0 else "worse")
    assert [c.verdict for c in changed(["a", "b"], before[:2], after[:2], refs[:2], "bleu")] == ["better", "worse"]


def test_a_metric_object_brings_its_own_settings():
    [wer] = changed(["u"], ["HELLO World"], ["hello world"], ["hello world"], WER("standardize"))
    assert (wer.verdict, wer.before_score, wer.after_score) == ("same", 0, 0)
    [bleu] = changed(["u"], ["THE CAT"], ["the dog"], ["the cat"], BLEUMetric(lowercase=True))
    assert bleu.verdict == "worse" and bleu.before_score == BLEU(effective_order=True).sentence_score(
        "the cat", ["the cat"]).score


def test_changed_rejects_unknown_metrics_and_mismatched_lengths():
    with pytest.raises(ConfigError, match="unknown metric"):
        changed(["u"], ["a"], ["b"], ["a"], "ter")
    with pytest.raises(ConfigError, match="2 ids"):
        changed(["u", "v"], ["a"], ["b"], ["a"])


def _change(utt: str, verdict: str, gain: int) -> Change:
    before, after = (gain, 0) if gain >= 0 else (0, -gain)
    return Change(utt, "r", "b", "a", verdict, before, after)


def test_examples_show_biggest_improvements_then_a_regression():
    changes = [_change("s", "same", 0), _change("b1", "better", 1), _change("w1", "worse", -1),
               _change("b3", "better", 3), _change("w2", "worse", -2), _change("b3x", "better", 3)]
    assert [c.id for c in examples(changes)] == ["b3", "b3x", "w2"]
    assert [c.id for c in examples(changes, k=1)] == ["b3"]
    assert [c.id for c in examples(changes, k=6)] == ["b3", "b3x", "b1", "w2", "w1", "s"]
    assert [c.id for c in examples([_change("s", "same", 0), _change("b", "better", 1)])] == ["b", "s"]
    assert examples(changes) == examples(list(changes))
