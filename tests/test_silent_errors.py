"""Inputs that used to give a plausible but wrong number, or a file its own reader refuses: each is now either the
right number (checked against jiwer, sacrebleu or a hand count) or one line naming what is wrong."""
from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import jiwer
import numpy as np
import pytest
import sacrebleu

import rescorer
from rescorer import Hypothesis, NBest, NBestFormatError, Utterance, read_nbest, write_nbest
from rescorer.combine import Column, Features
from rescorer.combine.interpolate import WORD_COUNT_COLUMN, totals
from rescorer.errors import ConfigError
from rescorer.io import fairseq, moses, natural_base, nemo
from rescorer.pipeline import score_nbest, write_1best


def lines(*rows: str) -> str:
    return "".join(f"{row}\n" for row in rows)


def one_line(err: BaseException) -> str:
    message = str(err)
    assert "\n" not in message, message
    return message


def two_utterances(first_text: str) -> NBest:
    return NBest((Utterance("0", (Hypothesis(first_text, {"score": -1.0}),), ref="a b"),
                  Utterance("1", (Hypothesis("c", {"score": -2.0}),), ref="c")), fmt="jsonl")


# ---------------------------------------------------------------- a line break inside a text
@pytest.mark.parametrize("with_ids", [True, False])
@pytest.mark.parametrize("text", ["a\nb", "a\rb", "a b\n"])
def test_1best_refuses_a_text_with_a_line_break_and_writes_nothing(tmp_path, with_ids, text):
    path = tmp_path / "1best.txt"
    with pytest.raises(NBestFormatError, match=r"1best.txt:1: text holds a line break") as info:
        write_1best(two_utterances(text), path, with_ids)
    assert repr(text) in one_line(info.value)
    assert not path.exists()


def test_1best_has_one_line_per_utterance(tmp_path):
    write_1best(two_utterances("a b"), tmp_path / "plain.txt", with_ids=False)
    write_1best(two_utterances("a b"), tmp_path / "text", with_ids=True)
    assert (tmp_path / "plain.txt").read_text() == lines("a b", "c")
    assert (tmp_path / "text").read_text() == lines("0 a b", "1 c")


@pytest.mark.parametrize("write", [moses.write, fairseq.write, nemo.write], ids=["moses", "fairseq", "nemo"])
def test_every_line_writer_refuses_a_line_break_itself(tmp_path, write):
    """Called directly (without write_nbest's checks first), each line writer still refuses, the same way."""
    with pytest.raises(NBestFormatError, match="text holds a line break") as info:
        write(two_utterances("a\nb"), tmp_path / "out")
    one_line(info.value)
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- references attach by id whenever they have ids
HYPS = {"utt1": "the cat sat", "utt2": "a dog barked loudly", "utt3": "birds sing"}
REFS = {"utt1": "the cat sat down", "utt2": "a dog barked", "utt3": "birds sing"}


def jsonl_list(tmp_path, ids_texts: dict[str, str]) -> Path:
    path = tmp_path / "nbest.jsonl"
    utterances = tuple(Utterance(uid, (Hypothesis(text, {"score": -1.0}),)) for uid, text in ids_texts.items())
    write_nbest(NBest(utterances, fmt="jsonl"), path)
    return path


@pytest.mark.parametrize("key", ["{uid}", "spk7-{uid}", "spk7-ch2-{uid}"], ids=["same", "spk-utt", "spk-chapter-utt"])
def test_kaldi_text_with_ids_attaches_by_id_in_any_order(tmp_path, key):
    (tmp_path / "text").write_text(lines(*(f"{key.format(uid=uid)} {REFS[uid]}" for uid in ("utt3", "utt1", "utt2"))))
    nbest = read_nbest(jsonl_list(tmp_path, HYPS), refs=tmp_path / "text")
    assert nbest.refs() == [REFS["utt1"], REFS["utt2"], REFS["utt3"]]
    expected = jiwer.wer(list(REFS.values()), list(HYPS.values()))  # 2 errors in 9 words
    assert expected == pytest.approx(2 / 9)
    assert rescorer.wer(nbest.refs(), nbest.select([0] * len(nbest))) == pytest.approx(100 * expected)  # percent


@pytest.mark.parametrize("first_ids", [("utt1", "utt2", "other3"), ("utt1", "other2", "other3")],
                         ids=["mostly-matching", "mostly-not-matching"])
def test_references_whose_ids_partly_match_name_the_first_unmatched_utterance(tmp_path, first_ids):
    refs = tmp_path / "text"
    refs.write_text(lines(*(f"{rid} {text}" for rid, text in zip(first_ids, REFS.values()))))
    with pytest.raises(NBestFormatError, match="utterance has no reference in") as info:
        read_nbest(jsonl_list(tmp_path, HYPS), refs=refs)
    message = one_line(info.value)
    assert str(refs) in message and repr(next(u for u in HYPS if u not in first_ids)) in message


def test_plain_reference_lines_starting_with_a_number_stay_text(tmp_path):
    """Numbered sentence ids (0, 1, 2) and a reference that starts with "2": plain lines, by position."""
    refs = tmp_path / "refs.txt"
    refs.write_text(lines("2 dogs ran", "a cat", "birds"))
    nbest = read_nbest(jsonl_list(tmp_path, {"0": "2 dogs ran", "1": "a hat", "2": "birds"}), refs=refs)
    assert nbest.refs() == ["2 dogs ran", "a cat", "birds"]


def test_numbered_ids_on_most_lines_attach_by_id(tmp_path):
    refs = tmp_path / "text"
    refs.write_text(lines("2 birds", "0 2 dogs ran", "1 a cat"))
    nbest = read_nbest(jsonl_list(tmp_path, {"0": "2 dogs ran", "1": "a hat", "2": "birds"}), refs=refs)
    assert nbest.refs() == ["2 dogs ran", "a cat", "birds"]


# ---------------------------------------------------------------- reserved and taken column names
def scored_list(tmp_path, columns: dict[str, list[float]]) -> NBest:
    """Two utterances of two hypotheses (3, 1, 2 and 4 words) with ``columns``, read from a JSONL file."""
    texts = [("a b c", "d"), ("e f", "g h i j")]
    values = iter(range(4))
    utterances = []
    for u, pair in enumerate(texts):
        hyps = []
        for text in pair:
            k = next(values)
            hyps.append(Hypothesis(text, {name: column[k] for name, column in columns.items()}))
        utterances.append(Utterance(f"u{u}", tuple(hyps)))
    write_nbest(NBest(tuple(utterances), fmt="jsonl"), tmp_path / "nbest.jsonl")
    return read_nbest(tmp_path / "nbest.jsonl")


def test_the_word_count_column_counts_words(tmp_path):
    nbest = scored_list(tmp_path, {"score": [-1.0, -2.0, -3.0, -4.0]})
    features = Features.of(nbest, Column("score"), [Column(WORD_COUNT_COLUMN)])
    assert features.values[..., 1].tolist() == [[3, 1], [2, 4]]  # counted by hand


def test_an_input_column_named_like_the_word_count_is_refused(tmp_path):
    nbest = scored_list(tmp_path, {"score": [-1.0, -2.0, -3.0, -4.0], "words": [9.0, 9.0, 9.0, 9.0]})
    with pytest.raises(ConfigError, match="input score column 'words' clashes with the built-in word count") as info:
        Features.of(nbest, Column("score"), [Column(WORD_COUNT_COLUMN)])
    assert f"{tmp_path / 'nbest.jsonl'}:1" in one_line(info.value)


def test_a_scorer_named_like_the_word_count_is_refused(tmp_path):
    nbest = scored_list(tmp_path, {"score": [-1.0, -2.0, -3.0, -4.0]})
    with pytest.raises(ConfigError, match="scorer 'words' clashes with the built-in word count") as info:
        Features.of(nbest, Column("score"), [Column(WORD_COUNT_COLUMN)], flat_columns={"words": np.zeros(4)})
    assert str(tmp_path / "nbest.jsonl") in one_line(info.value)


def test_a_scorer_named_like_an_input_column_is_refused_before_scoring(tmp_path):
    nbest = scored_list(tmp_path, {"score": [-1.0, -2.0, -3.0, -4.0], "lm": [0.0, 0.0, 0.0, 0.0]})
    with pytest.raises(ConfigError, match="scorer 'lm' would overwrite the input's score column 'lm'") as info:
        score_nbest(nbest, {"lm": object()})  # refused before the scorer is asked anything
    assert str(tmp_path / "nbest.jsonl") in one_line(info.value)


# ---------------------------------------------------------------- metric functions take one sentence pair or two lists
REF, HYP = "the cat sat on the mat today", "the cat sat on a mat today"


@pytest.mark.parametrize("function, peer", [
    (rescorer.wer, lambda refs, hyps: 100 * jiwer.wer(refs, hyps)),  # in percent
    (rescorer.bleu, lambda refs, hyps: sacrebleu.corpus_bleu(hyps, [refs]).score),
], ids=["wer", "bleu"])
def test_a_string_pair_is_one_sentence_for_every_metric(function, peer):
    expected = peer([REF], [HYP])
    assert expected > 0
    assert function(REF, HYP) == pytest.approx(expected)
    assert function([REF], [HYP]) == function((REF,), (HYP,)) == function(REF, HYP)


@pytest.mark.parametrize("function", [rescorer.wer, rescorer.bleu], ids=["wer", "bleu"])
@pytest.mark.parametrize("refs, hyps, problem", [
    (REF, [HYP], "refs must be a list of strings"),
    ([REF], HYP, "hyps must be a list of strings"),
    (iter([REF]), [HYP], "refs must be a list of strings .* not list_iterator"),
    ([REF], None, "hyps must be a list of strings .* not NoneType"),
    ([REF, 3], [HYP, "x"], r"refs\[1\] is not a string: 3"),
])
def test_other_metric_inputs_are_one_line_errors(function, refs, hyps, problem):
    with pytest.raises(ConfigError, match=problem) as info:
        function(refs, hyps)
    one_line(info.value)


# ---------------------------------------------------------------- totals that overflow
HUGE = 1e308
OVERFLOWING = [  # (text, {score, c1, c2}) per hypothesis, toolkit order; c1 and c2 are tuned at weight 2
    [("b0", [-1.0, 0.0, 0.0]), ("a0", [0.0, HUGE, -HUGE])],   # a0: 2e308 - 2e308 = 0 > -1: a0 wins (not NaN)
    [("c1", [-1.0, -HUGE, 0.0]), ("d1", [-2.0, 0.0, 0.0])],   # c1: -1 - 2e308 = -inf, sorts last: d1 wins
    [("e2", [0.0, 0.0, 0.0]), ("f2", [-1.0, 0.0, 0.0])],      # no change
]
AT_TWO = {"c1": {"range": [2, 2], "step": 1}, "c2": {"range": [2, 2], "step": 1}}


def overflowing_list(rows) -> NBest:
    utterances = []
    for u, hyps in enumerate(rows):
        best_text = hyps[1][0] if u < 2 else hyps[0][0]
        utterances.append(Utterance(f"u{u}", tuple(Hypothesis(text, dict(zip(("score", "c1", "c2"), values)))
                                                   for text, values in hyps), ref=best_text))
    return NBest(tuple(utterances), fmt="jsonl", source="overflow.jsonl")


def test_report_and_written_1best_agree_when_totals_overflow(tmp_path):
    nbest = overflowing_list(OVERFLOWING)
    result = rescorer.rescore(dev=nbest, columns=AT_TWO, bootstrap=1000, out_dir=tmp_path / "run")
    best = [line.split(" ", 1)[1] for line in (tmp_path / "run" / "dev" / "1best.txt").read_text().splitlines()]
    before = [u.hyps[0].text for u in nbest]
    assert best == ["a0", "d1", "e2"]  # by hand, from the comments above
    assert result.report.sets["dev"].changed_1best == sum(a != b for a, b in zip(before, best)) == 2
    reread = read_nbest(tmp_path / "run" / "dev.jsonl")
    assert [[h.scores["rescore"] for h in u.hyps] for u in reread] == [[0.0, -1.0], [-2.0, -math.inf], [0.0, -1.0]]


def test_a_total_beyond_the_float_range_is_refused():
    rows = [[("b0", [-1.0, HUGE, 0.0]), ("a0", [0.0, 0.0, 0.0])]]
    nbest = overflowing_list(rows)
    features = Features.of(nbest, Column("score"), [Column("c1"), Column("c2")])
    with pytest.raises(ConfigError, match=r"^overflow.jsonl: utterance 'u0': the total of hypothesis 1 is \+inf: "
                                          "column 'c1' is 1e\\+308 under weight 2") as info:
        totals(features, np.array([2.0, 2.0]))
    one_line(info.value)
    assert totals(features, np.array([0.5, 2.0])).tolist() == [[HUGE / 2 - 1.0, 0.0]]


def test_a_total_beyond_the_float_range_names_the_file_and_line_of_its_utterance(tmp_path):
    rows = [[(f"b{u}", [-1.0, HUGE if u == 2 else 0.0, 0.0]), (f"a{u}", [0.0] * 3)] for u in range(3)]
    path = tmp_path / "huge.jsonl"
    write_nbest(overflowing_list(rows), path)
    with pytest.raises(ConfigError) as info:
        rescorer.apply(path, rescorer.rescore(dev=overflowing_list(rows[:2]), columns=AT_TWO, bootstrap=10).tuned)
    assert str(info.value).startswith(f"{path}:3: utterance 'u2': the total of hypothesis 1 is +inf"), str(info.value)


def test_a_nan_lm_score_sorts_last_unless_its_weight_is_zero():
    nbest = overflowing_list([[("b0", [-1.0, 0.0, 0.0]), ("a0", [0.0, 0.0, 0.0])]])
    lm = {"c1": np.array([0.0, math.nan])}
    features = Features.of(nbest, Column("score"), [Column("c1"), Column("c2")], flat_columns=lm)
    assert totals(features, np.array([1.0, 0.0])).tolist() == [[-1.0, -math.inf]]
    assert totals(features, np.array([0.0, 0.0])).tolist() == [[-1.0, 0.0]]


# ---------------------------------------------------------------- every per-hypothesis score list of HyPoradise
HP_SCORE = json.dumps([{"input": ["a b", "a c", "d"], "output": "a b", "score": [-1.5, -2, -4.25], "lengths": [2, 2]},
                       {"input": ["e"], "output": "e f", "score": [-0.5], "instruction": "fix it"}], indent=2) + "\n"
HP_TWO = json.dumps([{"input": ["a b", "a c"], "output": "a c", "am_score": [-1.5, -2], "lm_score": [-9, -3.5]},
                     {"input": ["e", "f"], "output": "e", "lm_score": [-1, "-inf"], "am_score": [-0.5, -0.75]}],
                    indent=2) + "\n"


def test_hyporadise_score_list_is_a_column(tmp_path):
    (tmp_path / "hp.json").write_text(HP_SCORE)
    nbest = read_nbest(tmp_path / "hp.json")
    assert nbest.fmt == "hyporadise" and nbest.columns == ["score"]  # "lengths" is not one per hypothesis
    assert [[h.scores for h in u.hyps] for u in nbest] == [[{"score": -1.5}, {"score": -2.0}, {"score": -4.25}],
                                                           [{"score": -0.5}]]
    assert natural_base(nbest) == "score"


def test_hyporadise_two_score_lists_are_two_columns(tmp_path):
    (tmp_path / "hp.json").write_text(HP_TWO)
    nbest = read_nbest(tmp_path / "hp.json")
    assert nbest.columns == ["am_score", "lm_score"]
    assert [[h.scores for h in u.hyps] for u in nbest] == [
        [{"am_score": -1.5, "lm_score": -9.0}, {"am_score": -2.0, "lm_score": -3.5}],
        [{"am_score": -0.5, "lm_score": -1.0}, {"am_score": -0.75, "lm_score": -math.inf}]]
    best_by_lm = [max(u.hyps, key=lambda h: h.scores["lm_score"]).text for u in nbest]
    assert best_by_lm == ["a c", "e"]
    assert rescorer.wer(nbest.refs(), best_by_lm) == jiwer.wer(["a c", "e"], ["a c", "e"]) == 0


@pytest.mark.parametrize("text", [HP_SCORE, HP_TWO], ids=["score", "two-lists"])
def test_hyporadise_score_lists_are_written_back_in_place_and_follow_their_hypotheses(tmp_path, text):
    (tmp_path / "hp.json").write_text(text)
    nbest = read_nbest(tmp_path / "hp.json")
    write_nbest(nbest, tmp_path / "same.json")
    assert (tmp_path / "same.json").read_text() == text
    write_nbest(nbest.with_utterances([replace(u, hyps=u.hyps[::-1]) for u in nbest]), tmp_path / "flipped.json")
    before, after = json.loads(text), json.loads((tmp_path / "flipped.json").read_text())
    for old, new in zip(before, after):
        assert list(new) == list(old)
        for key, value in old.items():
            one_per_hypothesis = isinstance(value, list) and len(value) == len(old["input"])
            assert new[key] == (value[::-1] if one_per_hypothesis else value), key


def test_hyporadise_score_list_of_the_wrong_length_names_the_record(tmp_path):
    (tmp_path / "hp.json").write_text(lines("[", '{"input": ["a", "b"], "output": "a", "score": [-1, -2]},',
                                            '{"input": ["c", "d"], "output": "c", "score": [-1]}', "]"))
    with pytest.raises(NBestFormatError, match=r"hp.json:3: score field 'score' must be a list of 2 numbers") as info:
        read_nbest(tmp_path / "hp.json")
    one_line(info.value)
