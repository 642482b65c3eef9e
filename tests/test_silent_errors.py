"""Inputs that used to give a plausible but wrong number, or a file its own reader refuses: each is now either the
right number (checked against jiwer, sacrebleu or a hand count) or one line naming what is wrong."""
from __future__ import annotations

from pathlib import Path

import jiwer
import pytest

import rescorer
from rescorer import Hypothesis, NBest, NBestFormatError, Utterance, read_nbest, write_nbest
from rescorer.io import fairseq, moses, nemo
from rescorer.pipeline import write_1best


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
    assert rescorer.wer(nbest.refs(), nbest.select([0] * len(nbest))) == pytest.approx(expected)


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
