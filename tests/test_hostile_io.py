"""Hostile inputs and conversions: each test pins one way a file, a model or an output could go wrong."""
from __future__ import annotations

import math
import os
import re
import stat
import time
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


def rewrite_keeping_size_and_mtime(path: Path) -> None:
    """Flip the middle byte of ``path`` and put its old mtime back, as ``os.utime`` lets anyone do (after a clock
    tick: file times are kept at the kernel's tick)."""
    info = path.stat()
    time.sleep(0.05)
    with path.open("r+b") as handle:
        handle.seek(info.st_size // 2)
        byte = handle.read(1)
        handle.seek(info.st_size // 2)
        handle.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert path.stat().st_size == info.st_size and path.stat().st_mtime_ns == info.st_mtime_ns


def test_byte_flipped_in_the_middle_changes_the_fingerprint(tmp_path, cache):
    from rescorer.scorers.loading import local_fingerprint

    model = make_model(tmp_path)
    before = local_fingerprint(str(model))
    weights = model / "model.safetensors"
    info = weights.stat()
    with weights.open("r+b") as handle:  # same size, same first and last MiB
        handle.seek(info.st_size // 2)
        byte = handle.read(1)
        handle.seek(info.st_size // 2)
        handle.write(bytes([byte[0] ^ 0xFF]))
    os.utime(weights, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))  # a later write
    assert weights.stat().st_size == info.st_size
    assert local_fingerprint(str(model)) != before


def test_a_file_rewritten_with_its_old_size_and_mtime_is_hashed_again(tmp_path, cache):
    import hashlib

    from rescorer.filehash import file_digests

    model = make_model(tmp_path)
    weights = model / "model.safetensors"
    before = file_digests([weights])
    rewrite_keeping_size_and_mtime(weights)
    assert file_digests([weights]) != before
    assert file_digests([weights]) == [hashlib.blake2b(weights.read_bytes()).hexdigest()]


def test_unchanged_model_is_a_cache_hit(tmp_path, cache, monkeypatch):
    from rescorer import filehash
    from rescorer.scorers.loading import local_fingerprint

    calls = []
    real = filehash._hash_file
    monkeypatch.setattr(filehash, "_hash_file", lambda path: calls.append(path) or real(path))
    model = make_model(tmp_path)
    first = local_fingerprint(str(model))
    assert len(calls) == 2 and (cache / filehash.CACHE_NAME).is_file()
    assert local_fingerprint(str(model)) == first
    assert len(calls) == 2  # second look: nothing re-read
    (model / "config.json").write_text('{"model_type": "toy2"}\n')
    assert local_fingerprint(str(model)) != first
    assert len(calls) == 3  # only the changed file


def test_a_model_is_named_by_the_bytes_read_as_it_loads_whatever_the_cache_says(tmp_path, cache, monkeypatch):
    """Loading hashes the files it reads afresh: a hash cache that missed a change (here made to) never names the
    loaded bytes, and a file changed before the load is over is an error naming it."""
    import hashlib
    import json

    from rescorer import filehash
    from rescorer.errors import ScorerError

    model = make_model(tmp_path)
    weights = model / "model.safetensors"
    files = [model / "config.json", weights]
    genuine = filehash.file_digests(files)
    rewrite_keeping_size_and_mtime(weights)
    entries = json.loads((cache / filehash.CACHE_NAME).read_text())
    entries[str(weights.resolve())]["stamp"] = filehash.stamp(weights)  # a cache blind to the rewrite
    (cache / filehash.CACHE_NAME).write_text(json.dumps(entries))
    assert filehash.file_digests(files) == genuine
    with filehash.read_unchanged(files, "model m") as digests:
        pass
    assert digests == [hashlib.blake2b(f.read_bytes()).hexdigest() for f in files] and digests[1] != genuine[1]
    with pytest.raises(ScorerError, match=r"^model m: .*model.safetensors changed while it was being loaded"):
        with filehash.read_unchanged(files, "model m"):
            rewrite_keeping_size_and_mtime(weights)


# ---------------------------------------------------------------- #3 Moses references by sentence id
MOSES_OUT_OF_ORDER = lines("1 ||| the house is big ||| LM0= -3.5 ||| -1.5",
                           "0 ||| this is a small house ||| LM0= -4.5 ||| -2.5")


@pytest.mark.parametrize("fmt", ["moses", "marian"])
def test_plain_references_attach_by_sentence_id(tmp_path, fmt):
    (tmp_path / "nbest.txt").write_text(MOSES_OUT_OF_ORDER)
    (tmp_path / "ref.txt").write_text(lines("ref of sentence zero", "ref of sentence one"))
    nbest = read_nbest(tmp_path / "nbest.txt", fmt, refs=tmp_path / "ref.txt")
    assert {u.id: u.ref for u in nbest} == {"0": "ref of sentence zero", "1": "ref of sentence one"}


def test_sentence_id_without_a_reference_line_is_an_error(tmp_path):
    (tmp_path / "nbest.txt").write_text(MOSES_OUT_OF_ORDER.replace("1 |||", "5 |||"))
    (tmp_path / "ref.txt").write_text(lines("ref of sentence zero", "ref of sentence one"))
    with pytest.raises(NBestFormatError) as info:
        read_nbest(tmp_path / "nbest.txt", "moses", refs=tmp_path / "ref.txt")
    message = one_line(info.value)
    assert "nbest.txt:1:" in message and "'5'" in message and "ref.txt" in message


# ---------------------------------------------------------------- #5 conversions between formats
SINGLE_SCORE = {"fairseq", "sockeye", "nemo", "mlm-scoring"}
KEEPS_REFS = {"espnet1", "fairseq", "mlm-scoring", "jsonl", "hyporadise"}


def overall(scores: dict, target: str) -> str | None:
    names = ("total", "score") if target in ("moses", "marian") else ("score", "total")
    return next((n for n in names if n in scores), None)


def kept(scores: dict, target: str) -> dict:
    """The columns ``target`` reads back (see rescorer/io/target.py): all, or the overall one renamed."""
    if target in ("jsonl", "kaldi"):
        return dict(scores)
    if target == "hyporadise":  # am_score (else the overall score, as am_score); every other column by its own name
        main = "am_score" if "am_score" in scores else overall(scores, target)
        return {**({"am_score": scores[main]} if main else {}), **{k: v for k, v in scores.items() if k != main}}
    main = overall(scores, target)
    name = "total" if target in ("moses", "marian") else "score"
    if target in SINGLE_SCORE:
        return {name: scores[main]}
    return {name: scores[main], **{k: v for k, v in scores.items() if k != main}}


def refusal(nbest: NBest, target: str) -> str | None:
    """The error ``target`` must give for ``nbest``, in the order the writer checks."""
    if target in ("fairseq", "moses", "marian") and not all(re.fullmatch(r"0|[1-9]\d*", u.id) for u in nbest):
        return "sentence id must be a non-negative integer"
    if target == "nemo" and len({len(u.hyps) for u in nbest}) > 1:
        return "same number of beams"
    if target == "kaldi" and len({frozenset(h.scores) for u in nbest for h in u.hyps}) > 1:
        return "kaldi needs every column for every hypothesis"
    if target not in ("jsonl", "kaldi", "hyporadise") and any(overall(h.scores, target) is None
                                                             for u in nbest for h in u.hyps):
        return "no overall score"
    return None


@pytest.mark.parametrize("target", FORMATS)
@pytest.mark.parametrize("rel", [pytest.param(p.values[0], id=p.id) for p in FIXTURES])
def test_every_fixture_converts_to_every_format(tmp_path, rel, target):
    """Write → read back keeps ids, texts and the columns the target holds, or refuses in one line."""
    source = read(rel)
    path = tmp_path / ("out" if target in ("espnet2", "kaldi") else f"out.{target}")
    expected = refusal(source, target)
    if expected:
        with pytest.raises(NBestFormatError, match=expected) as info:
            write_and_read(source, path, target)
        assert str(path) in one_line(info.value)
        assert not path.exists()
        return
    back = write_and_read(source, path, target)
    assert sorted(u.id for u in back) == sorted(u.id for u in source)
    if target not in ("fairseq", "mlm-scoring"):  # those two read back in id order
        assert [u.id for u in back] == [u.id for u in source]
    got = {u.id: u for u in back}
    for utt in source:
        assert [h.text for h in got[utt.id].hyps] == [h.text for h in utt.hyps]
        if target in KEEPS_REFS and utt.ref is not None:
            assert got[utt.id].ref == utt.ref
        for h, g in zip(utt.hyps, got[utt.id].hyps):
            want = kept(dict(h.scores), target)
            assert g.scores.keys() == want.keys()
            assert all(math.isclose(g.scores[k], v, rel_tol=1e-12, abs_tol=1e-12) for k, v in want.items()), \
                (g.scores, want)



@pytest.mark.parametrize("target", ["espnet1", "sockeye", "mlm-scoring"])
def test_espnet2_tensor_scores_become_numbers(tmp_path, target):
    back = write_and_read(read(ESPNET2), tmp_path / f"out.{target}", target)
    assert [h.scores["score"] for h in back.utterances[0].hyps] == [-5.3164, -7.9025, -8.4410]
    assert not any("tensor" in raw for u in back for h in u.hyps for raw in h.raw.values())


def test_kaldi_writes_log_probs_as_costs(tmp_path):
    back = write_and_read(read(ESPNET2), tmp_path / "out", "kaldi")
    assert back.utterances[0].hyps[0].scores == {"score": -5.3164}
    assert (tmp_path / "out" / "score.cost").read_text().startswith("1272-128104-0000-1 5.3164\n")


def test_moses_to_espnet2_keeps_feature_names(tmp_path):
    moses = read("moses/nbest.old-labels.txt")
    back = write_and_read(moses, tmp_path / "out", "espnet2")
    hyp, original = back.utterances[0].hyps[0], moses.utterances[0].hyps[0]
    assert hyp.scores["d_0"] == original.scores["d_0"] and hyp.scores["score"] == original.scores["total"]
    assert "total" not in hyp.scores


def test_fairseq_to_moses_writes_the_natural_log_total(tmp_path):
    fairseq = read("fairseq/results/generate-test.txt")
    path = tmp_path / "out.txt"
    write_nbest(fairseq, path, "moses")
    back = read_nbest(path)
    want = [h.scores["score"] for u in fairseq for h in u.hyps]
    assert [h.scores for u in back for h in u.hyps] == [{"total": pytest.approx(v, rel=1e-12)} for v in want]
    assert "0.0\n" not in path.read_text()


@pytest.mark.parametrize("target", ["fairseq", "moses", "marian"])
def test_non_integer_ids_are_refused(tmp_path, target):
    with pytest.raises(NBestFormatError, match="1272-128104-0000") as info:
        write_nbest(read(ESPNET2), tmp_path / "out", target)
    one_line(info.value)
    assert list(tmp_path.iterdir()) == []


def test_score_column_picks_the_overall_score(tmp_path):
    kaldi = read("kaldi/nbest")
    with pytest.raises(NBestFormatError, match="score_column"):
        write_nbest(kaldi, tmp_path / "no.json", "mlm-scoring")
    write_nbest(kaldi, tmp_path / "out.json", "mlm-scoring", score_column="am")
    back = read_nbest(tmp_path / "out.json")
    assert [h.scores["score"] for h in back.utterances[0].hyps] == [h.scores["am"] for h in kaldi.utterances[0].hyps]
    with pytest.raises(ConfigError):
        write_nbest(kaldi, tmp_path / "k", "kaldi", score_column="am")


def test_utterance_without_hypotheses_is_refused(tmp_path):
    nbest = NBest((Utterance("0", (Hypothesis("a", {"score": -1.0}),)), Utterance("1", ())), fmt="jsonl")
    for target in ("espnet1", "fairseq", "moses", "kaldi"):
        with pytest.raises(NBestFormatError, match="no hypotheses"):
            write_nbest(nbest, tmp_path / f"out.{target}", target)


def test_minus_inf_is_written_as_each_format_can_read_it(tmp_path):
    nbest = NBest((Utterance("0", (Hypothesis("a", {"score": -math.inf}),)),), fmt="jsonl")
    for target in ("jsonl", "espnet2", "espnet1", "fairseq", "mlm-scoring"):
        back = write_and_read(nbest, tmp_path / f"out.{target}", target)
        assert back.utterances[0].hyps[0].scores["score"] == -math.inf, target
    for target in ("kaldi", "sockeye"):  # costs: +inf is not a cost their readers take
        with pytest.raises(NBestFormatError, match="-inf"):
            write_nbest(nbest, tmp_path / f"no.{target}", target)


def test_espnet1_refuses_texts_its_reader_would_change(tmp_path):
    nbest = NBest((Utterance("u", (Hypothesis("\u2581a <eos>", {"score": -1.0}),)),), fmt="jsonl")
    with pytest.raises(NBestFormatError, match="espnet1"):
        write_nbest(nbest, tmp_path / "data.json", "espnet1")


# ---------------------------------------------------------------- #11 tabs in ESPnet/Kaldi key files
def test_espnet2_text_and_score_accept_tabs(tmp_path):
    rank = tmp_path / "dec" / "1best_recog"
    rank.mkdir(parents=True)
    (rank / "text").write_text(lines("utt1\tHELLO WORLD", "utt2 GOOD\tBYE"))
    (rank / "score").write_text(lines("utt1\ttensor(-1.5)", "utt2\t-2.5"))
    nbest = read_nbest(tmp_path / "dec", "espnet2")
    assert [(u.id, u.hyps[0].text, u.hyps[0].scores["score"]) for u in nbest] == [
        ("utt1", "HELLO WORLD", -1.5), ("utt2", "GOOD\tBYE", -2.5)]


def test_kaldi_text_references_accept_tabs(tmp_path):
    (tmp_path / "ref").write_text(lines("1089-134686-0001\tSTUFF IT", "1089-134691-0000\tHE COULD"))
    nbest = read("kaldi/nbest", refs=tmp_path / "ref")
    assert [u.ref for u in nbest] == ["STUFF IT", "HE COULD"]


def test_score_without_value_says_so(tmp_path):
    rank = tmp_path / "dec" / "1best_recog"
    rank.mkdir(parents=True)
    (rank / "text").write_text(lines("utt1 A", "utt2 B"))
    (rank / "score").write_text(lines("utt1\t-1.5", "utt2\t"))
    with pytest.raises(NBestFormatError, match=r"score:2: truncated line \(no value after the utterance id\)"):
        read_nbest(tmp_path / "dec", "espnet2")


# ---------------------------------------------------------------- #14 ids of `id text` lines
@pytest.mark.parametrize("bad", ["u2 with space", "u2\twith", "u2\u00a0nbsp", "u2\r", ""])
def test_one_shared_id_check(tmp_path, bad):
    from rescorer.io.common import check_line_id, id_lines

    with pytest.raises(NBestFormatError) as info:
        check_line_id(bad, tmp_path / "1best.txt")
    assert repr(bad) in one_line(info.value) and "1best.txt" in str(info.value)
    with pytest.raises(NBestFormatError):
        id_lines([("u1", "A B"), (bad, "HELLO WORLD")], tmp_path / "1best.txt")
    assert id_lines([("u1", "A B"), ("u3", "")], tmp_path / "1best.txt") == "u1 A B\nu3 \n"


@pytest.mark.parametrize("target", ["espnet2", "kaldi"])
def test_id_text_writers_refuse_any_whitespace(tmp_path, target):
    nbest = NBest((Utterance("u2\u00a0x", (Hypothesis("HELLO", {"score": -1.0}),)),), fmt="jsonl")
    with pytest.raises(NBestFormatError, match="whitespace") as info:
        write_nbest(nbest, tmp_path / "out", target)
    assert "'u2\\xa0x'" in one_line(info.value)
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- #15 a missing base column, located
def test_missing_base_column_names_the_utterance_and_line(tmp_path):
    path = tmp_path / "nbest.jsonl"
    path.write_text(lines('{"id": "u1", "hyps": [{"text": "a", "scores": {"score": -1.0, "lm": -2.0}}]}',
                          '{"id": "u2", "hyps": [{"text": "b", "scores": {"lm": -3.0, "am": -1.0}}]}'))
    with pytest.raises(ConfigError) as info:
        Features.of(read_nbest(path), Column("score"), [Column("lm")])
    assert re.search(r"nbest\.jsonl:2: utterance 'u2' \(hypothesis 1\) has no score column 'score'; it has lm, am",
                     one_line(info.value)), str(info.value)


@pytest.mark.parametrize("rel", [pytest.param(p.values[0], id=p.id) for p in FIXTURES])
def test_every_reader_records_file_and_line(rel):
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
def test_outputs_honour_the_umask(tmp_path, mask, file_mode, dir_mode):
    from rescorer.files import current_umask, write_text

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


def test_failed_write_leaves_nothing(tmp_path):
    from rescorer.files import atomic_file

    with pytest.raises(RuntimeError), atomic_file(tmp_path / "out.txt") as tmp:
        tmp.write_text("half")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []
    assert rescorer.NBestFormatError is NBestFormatError


def test_the_rescored_1best_refuses_ids_it_cannot_write(tmp_path):
    from rescorer.pipeline import write_1best

    nbest = NBest((Utterance("u2 with space", (Hypothesis("HELLO WORLD"),)),))
    with pytest.raises(NBestFormatError, match="contains whitespace"):
        write_1best(nbest, tmp_path / "1best.txt", with_ids=True)
    assert not (tmp_path / "1best.txt").exists()
    write_1best(nbest, tmp_path / "plain.txt", with_ids=False)
    assert (tmp_path / "plain.txt").read_text() == "HELLO WORLD\n"


def test_an_argument_of_the_wrong_type_is_one_error_of_the_api_naming_it_and_its_choices(tmp_path):
    listed = tmp_path / "list.jsonl"
    listed.write_text('{"id": "u1", "ref": "a", "hyps": [{"text": "a", "scores": {"am": -1.0, "lm": -2.0}}]}\n')
    tuned = rescorer.rescore(sets={"dev": str(listed)}, base="am", columns={"lm": {}}).tuned
    for call, says in [(lambda: rescorer.apply(None, tuned, inputs=[listed], out_dir=tmp_path / "out", fmt=[1, 2]),
                        "fmt must be one of auto, espnet2, "),
                       (lambda: rescorer.apply(None, tuned, inputs=5, out_dir=tmp_path / "out"),
                        "inputs must be a path or a list of paths"),
                       (lambda: rescorer.rescore(sets={"dev": str(listed)}, base={"name": [1, 2]}, columns={"lm": {}}),
                        "base.name must be a string or null, not [1, 2]")]:
        with pytest.raises(ConfigError) as caught:
            call()
        assert says in one_line(caught.value), str(caught.value)
    assert not (tmp_path / "out").exists()
