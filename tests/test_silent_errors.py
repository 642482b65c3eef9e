"""Inputs that used to give a plausible but wrong number, or a file its own reader refuses: each is now either the
right number (checked against jiwer, sacrebleu or a hand count) or one line naming what is wrong."""
from __future__ import annotations

import pytest

from rescorer import Hypothesis, NBest, NBestFormatError, Utterance
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
