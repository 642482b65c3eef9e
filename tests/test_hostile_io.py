"""Issue 16: hostile inputs and conversions. Each ``test_issue16_<n>_…`` pins defect #n of the issue."""
from __future__ import annotations

import math
import os
import re
import stat
from contextlib import contextmanager
from pathlib import Path

import pytest

import rescorer
from rescorer import Hypothesis, NBest, NBestFormatError, Utterance, read_nbest, write_nbest
from rescorer.combine import Column, Features
from rescorer.errors import ConfigError
from rescorer.io import FORMATS

from .test_formats import FIXTURES, read, write_and_read

ESPNET2 = "espnet2/decode_asr_lm/dev_clean"


def lines(*rows: str) -> str:
    return "".join(f"{row}\n" for row in rows)


def one_line(err: Exception) -> str:
    message = str(err)
    assert "\n" not in message, message
    return message


# ---------------------------------------------------------------- #2 model fingerprint
def make_model(root: Path) -> Path:
    model = root / "model"
    model.mkdir()
    (model / "config.json").write_text('{"model_type": "toy"}\n')
    (model / "model.safetensors").write_bytes(os.urandom(4 << 20))
    return model


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RESCORER_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_issue16_2_byte_flipped_in_the_middle_changes_the_fingerprint(tmp_path, cache):
    from rescorer.scorers.loading import fingerprint

    model = make_model(tmp_path)
    before = fingerprint(str(model), None)
    weights = model / "model.safetensors"
    info = weights.stat()
    with weights.open("r+b") as handle:  # same size, same first and last MiB
        handle.seek(info.st_size // 2)
        byte = handle.read(1)
        handle.seek(info.st_size // 2)
        handle.write(bytes([byte[0] ^ 0xFF]))
    os.utime(weights, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))  # a later write
    assert weights.stat().st_size == info.st_size
    assert fingerprint(str(model), None) != before


def test_issue16_2_unchanged_model_is_a_cache_hit(tmp_path, cache, monkeypatch):
    from rescorer import filehash
    from rescorer.scorers.loading import fingerprint

    calls = []
    real = filehash._hash_file
    monkeypatch.setattr(filehash, "_hash_file", lambda path: calls.append(path) or real(path))
    model = make_model(tmp_path)
    first = fingerprint(str(model), None)
    assert len(calls) == 2 and (cache / filehash.CACHE_NAME).is_file()
    assert fingerprint(str(model), None) == first
    assert len(calls) == 2  # second load: nothing re-read
    (model / "config.json").write_text('{"model_type": "toy2"}\n')
    assert fingerprint(str(model), None) != first
    assert len(calls) == 3  # only the changed file


# ---------------------------------------------------------------- #3 Moses references by sentence id
MOSES_OUT_OF_ORDER = lines("1 ||| the house is big ||| LM0= -3.5 ||| -1.5",
                           "0 ||| this is a small house ||| LM0= -4.5 ||| -2.5")


@pytest.mark.parametrize("fmt", ["moses", "marian"])
def test_issue16_3_plain_references_attach_by_sentence_id(tmp_path, fmt):
    (tmp_path / "nbest.txt").write_text(MOSES_OUT_OF_ORDER)
    (tmp_path / "ref.txt").write_text(lines("ref of sentence zero", "ref of sentence one"))
    nbest = read_nbest(tmp_path / "nbest.txt", fmt, refs=tmp_path / "ref.txt")
    assert {u.id: u.ref for u in nbest} == {"0": "ref of sentence zero", "1": "ref of sentence one"}


def test_issue16_3_sentence_id_without_a_reference_line_is_an_error(tmp_path):
    (tmp_path / "nbest.txt").write_text(MOSES_OUT_OF_ORDER.replace("1 |||", "5 |||"))
    (tmp_path / "ref.txt").write_text(lines("ref of sentence zero", "ref of sentence one"))
    with pytest.raises(NBestFormatError) as info:
        read_nbest(tmp_path / "nbest.txt", "moses", refs=tmp_path / "ref.txt")
    message = one_line(info.value)
    assert "nbest.txt:1:" in message and "'5'" in message and "ref.txt" in message


# ---------------------------------------------------------------- #11 tabs in ESPnet/Kaldi key files
def test_issue16_11_espnet2_text_and_score_accept_tabs(tmp_path):
    rank = tmp_path / "dec" / "1best_recog"
    rank.mkdir(parents=True)
    (rank / "text").write_text(lines("utt1\tHELLO WORLD", "utt2 GOOD\tBYE"))
    (rank / "score").write_text(lines("utt1\ttensor(-1.5)", "utt2\t-2.5"))
    nbest = read_nbest(tmp_path / "dec", "espnet2")
    assert [(u.id, u.hyps[0].text, u.hyps[0].scores["score"]) for u in nbest] == [
        ("utt1", "HELLO WORLD", -1.5), ("utt2", "GOOD\tBYE", -2.5)]


def test_issue16_11_kaldi_text_references_accept_tabs(tmp_path):
    (tmp_path / "ref").write_text(lines("1089-134686-0001\tSTUFF IT", "1089-134691-0000\tHE COULD"))
    nbest = read("kaldi/nbest", refs=tmp_path / "ref")
    assert [u.ref for u in nbest] == ["STUFF IT", "HE COULD"]


def test_issue16_11_score_without_value_says_so(tmp_path):
    rank = tmp_path / "dec" / "1best_recog"
    rank.mkdir(parents=True)
    (rank / "text").write_text(lines("utt1 A", "utt2 B"))
    (rank / "score").write_text(lines("utt1\t-1.5", "utt2\t"))
    with pytest.raises(NBestFormatError, match=r"score:2: truncated line \(no value after the utterance id\)"):
        read_nbest(tmp_path / "dec", "espnet2")


# ---------------------------------------------------------------- #14 ids of `id text` lines
@pytest.mark.parametrize("bad", ["u2 with space", "u2\twith", "u2\u00a0nbsp", "u2\r", ""])
def test_issue16_14_one_shared_id_check(tmp_path, bad):
    from rescorer.io.common import check_line_id, id_lines

    with pytest.raises(NBestFormatError) as info:
        check_line_id(bad, tmp_path / "1best.txt")
    assert repr(bad) in one_line(info.value) and "1best.txt" in str(info.value)
    with pytest.raises(NBestFormatError):
        id_lines([("u1", "A B"), (bad, "HELLO WORLD")], tmp_path / "1best.txt")
    assert id_lines([("u1", "A B"), ("u3", "")], tmp_path / "1best.txt") == "u1 A B\nu3 \n"


@pytest.mark.parametrize("target", ["espnet2", "kaldi"])
def test_issue16_14_id_text_writers_refuse_any_whitespace(tmp_path, target):
    nbest = NBest((Utterance("u2\u00a0x", (Hypothesis("HELLO", {"score": -1.0}),)),), fmt="jsonl")
    with pytest.raises(NBestFormatError, match="whitespace") as info:
        write_nbest(nbest, tmp_path / "out", target)
    assert "'u2\\xa0x'" in one_line(info.value)
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- #15 a missing base column, located
def test_issue16_15_missing_base_column_names_the_utterance_and_line(tmp_path):
    path = tmp_path / "nbest.jsonl"
    path.write_text(lines('{"id": "u1", "hyps": [{"text": "a", "scores": {"score": -1.0, "lm": -2.0}}]}',
                          '{"id": "u2", "hyps": [{"text": "b", "scores": {"lm": -3.0, "am": -1.0}}]}'))
    with pytest.raises(ConfigError) as info:
        Features.of(read_nbest(path), Column("score"), [Column("lm")])
    assert re.search(r"nbest\.jsonl:2: utterance 'u2' \(hypothesis 1\) has no score column 'score'; it has lm, am",
                     one_line(info.value)), str(info.value)


@pytest.mark.parametrize("rel", [pytest.param(p.values[0], id=p.id) for p in FIXTURES])
def test_issue16_15_every_reader_records_file_and_line(rel):
    for utt in read(rel):
        file, _, line = utt.origin.rpartition(":")
        assert Path(file).is_file() and line.isdigit(), utt.origin
        assert 1 <= int(line) <= len(Path(file).read_text(encoding="utf-8").split("\n"))


# ---------------------------------------------------------------- #16 output modes follow the umask
@contextmanager
def umask(mask: int):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("mask, file_mode, dir_mode", [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700)])
def test_issue16_16_outputs_honour_the_umask(tmp_path, mask, file_mode, dir_mode):
    from rescorer.io.common import current_umask, write_text

    nbest = read(ESPNET2)
    with umask(mask):
        assert current_umask() == mask
        write_text(tmp_path / "plain.txt", "x\n")
        write_nbest(nbest, tmp_path / "nbest.jsonl", "jsonl")
        write_nbest(nbest, tmp_path / "decode", "espnet2")
        assert os.umask(mask) == mask  # reading it left it alone
    assert mode(tmp_path / "plain.txt") == mode(tmp_path / "nbest.jsonl") == file_mode
    assert mode(tmp_path / "decode") == dir_mode
    assert mode(tmp_path / "decode" / "1best_recog" / "text") == file_mode


def test_issue16_16_failed_write_leaves_nothing(tmp_path):
    from rescorer.io.common import atomic_file

    with pytest.raises(RuntimeError), atomic_file(tmp_path / "out.txt") as tmp:
        tmp.write_text("half")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []
    assert rescorer.NBestFormatError is NBestFormatError
