"""ESPnet2 decode directories and Kaldi n-best directories read and written block by block: any block size gives
the list read whole and the bytes written whole; each file is read a line at a time, in step with the others."""
from __future__ import annotations

import inspect
from itertools import islice
from pathlib import Path

import pytest

from rescorer.errors import NBestFormatError
from rescorer.io import REGISTRY, block_writer, read_nbest, write_nbest
from rescorer.types import NBest

from .conftest import DEMO, LIBRISPEECH, need
from .test_malformed import build, lines

FIX = Path(__file__).parent / "fixtures" / "formats"
LISTS = [
    pytest.param(FIX / "espnet2" / "decode_asr_lm" / "dev_clean", "espnet2", id="espnet2-jobs"),
    pytest.param(DEMO / "dev_other", "espnet2", id="espnet2-demo-dev_other"),
    pytest.param(DEMO / "test_clean", "espnet2", id="espnet2-demo-test_clean"),
    pytest.param(FIX / "kaldi" / "nbest", "kaldi", id="kaldi"),
]
REAL = 300  # utterances of the real data set read and written: enough for many blocks, and fast


def in_blocks(nbest: NBest, size: int) -> list[NBest]:
    return [nbest.with_utterances(nbest.utterances[k : k + size]) for k in range(0, len(nbest), size)]


def tree(path: Path) -> dict[str, bytes]:
    """Every file below ``path`` → its bytes."""
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def written_in_blocks(nbest: NBest, path: Path, fmt: str, size: int) -> dict[str, bytes]:
    with block_writer(path, nbest, fmt) as write:
        for block in in_blocks(nbest, size):
            write(block)
    return tree(path)


# ---------------------------------------------------------------- reading
@pytest.mark.parametrize("path, fmt", LISTS)
@pytest.mark.parametrize("size", [1, 7, 0])
def test_blocks_of_any_size_join_into_the_list_read_whole(path: Path, fmt: str, size: int) -> None:
    whole = read_nbest(path, fmt)
    blocks = list(REGISTRY[fmt].blocks(path, size=size))
    assert all(len(block) == size for block in blocks[:-1]) and 0 < len(blocks[-1]) <= (size or len(whole))
    assert [u for block in blocks for u in block] == list(whole.utterances)
    assert {(block.fmt, block.source) for block in blocks} == {(fmt, str(path))}


@pytest.mark.parametrize("size", [1, 7, 0])
def test_the_real_decode_directory_reads_alike_in_blocks_of_any_size(size: int) -> None:
    path = need(LIBRISPEECH / "dev_other")
    reference = next(REGISTRY["espnet2"].blocks(path, size=REAL)).utterances
    blocks = REGISTRY["espnet2"].blocks(path, size=size)
    found = [u for block in islice(blocks, -(-REAL // size) if size else 1) for u in block][:REAL]
    assert found == list(reference)
    assert len(reference) == REAL and {len(u.hyps) for u in reference} == {30}


@pytest.mark.parametrize("fmt, files, bad", [
    pytest.param("espnet2", {f"1best_recog/{name}": lines(*(f"u{k} {value}" for k in range(1, 6)))
                             for name, value in (("text", "a b"), ("score", "-1.5"))}, "1best_recog/score",
                 id="espnet2"),
    pytest.param("kaldi", {"words_text": lines(*(f"u{k}-1 a b" for k in range(1, 6))),
                           "acwt": lines(*(f"u{k}-1 12.5" for k in range(1, 6)))}, "acwt", id="kaldi"),
])
def test_the_reader_gives_each_block_before_reading_the_lines_after_it(tmp_path: Path, fmt: str, files: dict,
                                                                     bad: str) -> None:
    """A reader holds one block: the blocks before a bad line come out before it is read."""
    build(tmp_path, files)
    (tmp_path / bad).write_text((tmp_path / bad).read_text().replace("u5-1 12.5", "u5-1 abc")
                                .replace("u5 -1.5", "u5 abc"))
    blocks = REGISTRY[fmt].blocks(tmp_path, size=1)
    assert inspect.isgenerator(blocks)
    assert [block.utterances[0].id for block in islice(blocks, 4)] == ["u1", "u2", "u3", "u4"]
    with pytest.raises(NBestFormatError, match=rf"{bad}:5: .*abc"):
        next(blocks)


ESPNET_OK = {"1best_recog/text": lines("u1 a", "u2 b", "u3 c"), "1best_recog/score": lines("u1 -1", "u2 -2", "u3 -3")}


@pytest.mark.parametrize("files, where, value", [
    pytest.param({**ESPNET_OK, "2best_recog/text": lines("u3 c c", "u1 a a"),
                  "2best_recog/score": lines("u3 -4", "u1 -5")}, "2best_recog/text:2", "u1", id="rank-2-text"),
    pytest.param({**ESPNET_OK, "1best_recog/score": lines("u2 -2", "u1 -1", "u3 -3")}, "1best_recog/score:1", "u2",
                 id="score-beside-its-text"),
    pytest.param({**ESPNET_OK, "1best_recog/token": lines("u1 a", "u3 c", "u2 b")}, "1best_recog/token:2", "u3",
                 id="token-beside-its-text"),
])
def test_an_espnet2_file_out_of_the_1best_order_is_refused_naming_its_line(tmp_path: Path, files: dict, where: str,
                                                                           value: str) -> None:
    build(tmp_path / "dec", files)
    with pytest.raises(NBestFormatError, match="not in the order of") as info:
        read_nbest(tmp_path / "dec", "espnet2")
    assert f"dec/{where}: " in str(info.value) and str(info.value).endswith(repr(value))


def test_an_espnet2_rank_that_skips_utterances_keeps_the_1best_order(tmp_path: Path) -> None:
    build(tmp_path / "dec", {**ESPNET_OK, "2best_recog/text": lines("u1 a a", "u3 c c"),
                             "2best_recog/score": lines("u1 -4", "u3 -5")})
    nbest = read_nbest(tmp_path / "dec", "espnet2")
    assert [[h.text for h in u.hyps] for u in nbest] == [["a", "a a"], ["b"], ["c", "c c"]]


def test_kaldi_keys_of_one_utterance_on_lines_apart_are_refused(tmp_path: Path) -> None:
    build(tmp_path / "nb", {"words_text": lines("u1-1 a", "u2-1 b", "u1-2 c")})
    with pytest.raises(NBestFormatError, match=r"nb/words_text:3: .*consecutive lines.*'u1-2'"):
        read_nbest(tmp_path / "nb", "kaldi")


def test_a_kaldi_cost_file_in_another_order_is_read_by_key(tmp_path: Path) -> None:
    words = lines("u1-1 a", "u1-2 b", "u2-1 c")
    build(tmp_path / "in_order", {"words_text": words, "acwt": lines("u1-1 1", "u1-2 2", "u2-1 3")})
    build(tmp_path / "other", {"words_text": words, "acwt": lines("u1-1 1", "u2-1 3", "u1-2 2")})
    assert read_nbest(tmp_path / "other", "kaldi").utterances == read_nbest(tmp_path / "in_order", "kaldi").utterances


# ---------------------------------------------------------------- writing
def sources() -> list:
    """Lists to write: those of :data:`LISTS` (one demo set of the two), a Moses list (columns by name), and each in
    reverse order (the ESPnet2 1-best, sorted by id, then differs from the list's order)."""
    found = [pytest.param(*p.values, False, id=p.id) for p in LISTS if p.id != "espnet2-demo-test_clean"]
    found.append(pytest.param(FIX / "moses" / "nbest.txt", "moses", False, id="moses"))
    return found + [pytest.param(*p.values[:2], True, id=f"{p.id}-reversed") for p in found]


@pytest.mark.parametrize("path, fmt, reverse", sources())
@pytest.mark.parametrize("target", ["espnet2", "kaldi"])
def test_writing_in_blocks_gives_the_bytes_written_whole(tmp_path: Path, path: Path, fmt: str, reverse: bool,
                                                         target: str) -> None:
    nbest = read_nbest(path, fmt)
    nbest = nbest.with_utterances(nbest.utterances[::-1]) if reverse else nbest
    if not {"score", "total"} & set(nbest.columns):  # Kaldi costs: one of them is the ESPnet2 score
        nbest = nbest.with_columns({"score": nbest.column_array("am")})
    write_nbest(nbest, tmp_path / "whole", target)
    whole = tree(tmp_path / "whole")
    assert "text" in whole or "words_text" in whole
    for size in (1, 7):
        assert written_in_blocks(nbest, tmp_path / f"blocks{size}", target, size) == whole


@pytest.mark.parametrize("target", ["espnet2", "kaldi"])
def test_the_real_decode_directory_gives_the_same_bytes_in_blocks(tmp_path: Path, target: str) -> None:
    nbest = next(REGISTRY["espnet2"].blocks(need(LIBRISPEECH / "dev_other"), size=REAL))
    write_nbest(nbest, tmp_path / "whole", target)
    whole = tree(tmp_path / "whole")
    for size in (1, 7):
        assert written_in_blocks(nbest, tmp_path / f"blocks{size}", target, size) == whole
    if target == "espnet2":  # ids in sorted order: the top-level 1-best is 1best_recog's, copied
        assert [u.id for u in nbest] == sorted(u.id for u in nbest)
        assert sorted(whole) == sorted(["text", "score"] + [f"{k}best_recog/{name}" for k in range(1, 31)
                                                            for name in ("text", "score", "scores")])
        assert read_nbest(tmp_path / "whole", "espnet2").utterances == nbest.utterances


@pytest.mark.parametrize("target", ["espnet2", "kaldi"])
def test_an_id_given_in_an_earlier_block_is_refused_and_nothing_is_left(tmp_path: Path, target: str) -> None:
    nbest = read_nbest(FIX / "espnet2" / "decode_asr_lm" / "dev_clean", "espnet2")
    with pytest.raises(NBestFormatError, match="duplicate utterance id"):
        with block_writer(tmp_path / "out", nbest, target) as write:
            write(nbest)
            write(in_blocks(nbest, 1)[1])
    assert list(tmp_path.iterdir()) == []


def test_a_kaldi_block_with_a_column_the_blocks_before_it_lack_is_refused(tmp_path: Path) -> None:
    nbest = read_nbest(FIX / "kaldi" / "nbest", "kaldi")
    first, second = in_blocks(nbest, 1)
    with pytest.raises(NBestFormatError, match=r"the hypotheses before one of '1089-134691-0000' lack: \['x'\]"):
        with block_writer(tmp_path / "out", nbest, "kaldi") as write:
            write(first)
            write(second.with_columns({"x": [0.0] * second.num_hypotheses}))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("run", [1, 2, 7, 100_000])
def test_the_top_level_1best_is_sorted_by_id_a_run_of_lines_at_a_time_as_a_whole_sort_would(tmp_path: Path,
                                                                                           run: int) -> None:
    from rescorer.io import espnet

    ids = [f"utt{k % 13}-{k % 5}" for k in range(40)]  # ids met more than once keep their order
    lines = [f"{i} text {k}\n".encode() for k, i in enumerate(ids)] + [b"lone\n"]  # an empty text: no space
    (tmp_path / "in").write_bytes(b"".join(lines))
    espnet.sort_lines(tmp_path / "in", tmp_path / "out", run)
    expected = sorted(lines, key=lambda line: line.split()[0])  # Python's sort is stable
    assert (tmp_path / "out").read_bytes() == b"".join(expected)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "out"]  # the spilled runs are gone


def test_a_decode_directory_out_of_id_order_writes_its_1best_sorted_whatever_the_run(tmp_path: Path, monkeypatch):
    from rescorer.io import espnet

    nbest = read_nbest(DEMO / "dev_other")
    nbest = nbest.with_utterances(nbest.utterances[::-1])
    write_nbest(nbest, tmp_path / "whole", "espnet2")
    monkeypatch.setattr(espnet, "SORT_RUN", 3)
    write_nbest(nbest, tmp_path / "runs", "espnet2")
    assert tree(tmp_path / "runs") == tree(tmp_path / "whole")
    ids = [line.split()[0] for line in (tmp_path / "runs" / "text").read_text().splitlines()]
    assert ids == sorted(ids) and len(ids) == len(nbest)
