"""Readers remember the ids they met in a few bytes each, however long the list: a duplicate is found, with where
its first copy was, after the ids have left the recent ones for the compact older ones."""
from __future__ import annotations

import pytest

import rescorer
from rescorer.io.seen import Seen


@pytest.fixture
def few_recent(monkeypatch):
    monkeypatch.setattr(Seen, "RECENT", 4)


def test_ids_keep_their_numbers_once_they_are_older(few_recent):
    seen = Seen()
    for k in range(11):
        seen[f"utt{k}"] = 100 + k
    assert seen.hashes.size == 8 and len(seen.recent) == 3  # two settled batches of four, three recent
    assert [seen.get(f"utt{k}") for k in range(11)] == [100 + k for k in range(11)]
    assert "utt11" not in seen and seen.get("utt11") is None
    seen["utt2"] = 7  # an older id given a new number keeps one entry
    assert seen["utt2"] == 7 and seen.hashes.size + len(seen.recent) == 11
    with pytest.raises(KeyError):
        seen["nope"]


def test_ids_met_without_numbers_keep_8_bytes_each_until_one_is_given(few_recent):
    seen = Seen()
    for k in range(9):
        seen.add(f"utt{k}")
    assert seen.numbers is None and seen.hashes.size == 8 and "utt0" in seen and seen["utt7"] == 0
    seen["utt3"] = 5
    assert seen["utt3"] == 5 and seen["utt4"] == 0 and seen["utt8"] == 0 and seen.numbers.size == 8


def test_a_duplicate_id_far_from_its_first_copy_is_refused_where_it_comes_again(few_recent, tmp_path):
    line = '{"id": "u%d", "hyps": [{"text": "a", "scores": {"am": -1.0}}]}\n'
    listed = tmp_path / "list.jsonl"
    listed.write_text("".join(line % k for k in range(20)) + line % 3)
    with pytest.raises(rescorer.NBestFormatError, match=r"list.jsonl:21: duplicate utterance id"):
        rescorer.read_nbest(listed)
    fairseq = tmp_path / "gen.txt"
    fairseq.write_text("".join(f"H-{k}\t-1.0\ta\n" for k in range(20)) + "H-3\t-1.0\ta\n")
    with pytest.raises(rescorer.NBestFormatError, match=r"gen.txt:21: sentence id appears in two separate blocks"):
        rescorer.read_nbest(fairseq)
    fairseq.write_text("".join(f"H-{k}\t-1.0\ta\n" for k in (5, 3, 19, 0, 7, 11, 2)))  # in batch order
    assert [u.id for u in rescorer.read_nbest(fairseq)] == ["0", "2", "3", "5", "7", "11", "19"]


def test_a_fairseq_id_too_large_for_64_bits_is_refused(tmp_path):
    fairseq = tmp_path / "gen.txt"
    fairseq.write_text(f"H-{1 << 63}\t-1.0\ta\n")
    with pytest.raises(rescorer.NBestFormatError, match="sentence id is larger than"):
        rescorer.read_nbest(fairseq)
