"""The line-based and record formats (fairseq, Moses, Marian, Sockeye, NeMo, HyPoradise, fields) read and written
block by block: blocks of any size are the whole list, the block writer writes the whole writer's bytes, and the
rules a reader or writer that sees one block at a time keeps."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import rescorer.io.codec as codec
from rescorer import Hypothesis, NBest, NBestFormatError, Utterance
from rescorer.io import REGISTRY, block_writer, detect_format, read_blocks, read_nbest, write_nbest
from rescorer.io.codec import document, document_end, document_items, load_json
from rescorer.io.common import UTTERANCES, read_text

from .conftest import MOSES, need
from .test_malformed import build, check_message, lines

FIX = Path(__file__).parent / "fixtures" / "formats"
ROWS = {"id": "utt", "rank": "rank", "hyps": "hyp", "ref": "ref", "scores": ["am"]}
RECORDS = {"id": "key", "hyps": "nbest", "ref": "truth", "scores": ["am"]}
NEMO = {"manifest": FIX / "nemo" / "dev_clean.json"}
LISTS = [pytest.param(FIX / rel, fmt, options, id=rel.replace("/", "-")) for rel, fmt, options in [
    ("fairseq/results/generate-test.txt", "fairseq", {}),
    ("fairseq/generate-test.v0.9.txt", "fairseq", {}),
    ("fairseq/interactive.out", "fairseq", {}),
    ("moses/nbest.old-labels.txt", "moses", {}),
    ("moses/nbest.txt", "moses", {}),
    ("moses/nbest.segmentation.txt", "moses", {}),
    ("marian/nbest.txt", "marian", {}),
    ("marian/nbest.glued.txt", "marian", {}),
    ("marian/nbest.align.txt", "marian", {}),
    ("sockeye/nbest.jsonl", "sockeye", {}),
    ("sockeye/nbest.factored.jsonl", "sockeye", {}),
    ("nemo/preds_out_size4_alpha0.5_beta1.0.tsv", "nemo", NEMO),
    ("hyporadise/test_chime4.json", "hyporadise", {}),
    ("hyporadise/compact.json", "hyporadise", {}),
    ("fields/rows.jsonl", "fields", {"fields": ROWS}),
    ("fields/rows.csv", "fields", {"fields": ROWS}),
    ("fields/records.jsonl", "fields", {"fields": RECORDS}),
]]


def real_moses():
    return pytest.param(MOSES / "nbest.out", "moses", {}, id="real-moses")


def source(path: Path) -> Path:
    return need(path) if path.parent == MOSES else path


def blocks(path: Path, fmt: str, size: int, options: dict) -> list[NBest]:
    return list(read_blocks(path, fmt, size=size, **options))


# ---------------------------------------------------------------- reading
@pytest.mark.parametrize("path, fmt, options", [*LISTS, real_moses()])
def test_blocks_of_any_size_are_the_whole_list_in_its_order(path, fmt, options):
    whole = read_nbest(source(path), fmt, **options)
    for size in (1, 7, 0):
        found = blocks(path, fmt, size, options)
        assert [len(b) for b in found[:-1]] == [size] * (len(found) - 1)
        assert 0 < len(found[-1]) <= (size or UTTERANCES)
        assert [u for b in found for u in b] == list(whole.utterances)
        assert {(b.fmt, json.dumps(dict(b.meta))) for b in found} == {(whole.fmt, json.dumps(dict(whole.meta)))}


SYNTHETIC = NBest(tuple(Utterance(str(i if i < 10 else i + 10), tuple(  # ids stop being indices, a column comes later
    Hypothesis(f"hyp {k} of {i} café", {"score": -i - k / 2, "lm": -3.25 * k, **({"extra": k / 2} if i >= 15 else {})})
    for k in range(3)), ref=f"ref {i} naïve") for i in range(23)))
TARGETS = [pytest.param(fmt, name, id=f"{fmt}-{name}") for fmt, name in [
    ("fairseq", "out.txt"), ("moses", "out.txt"), ("marian", "out.txt"), ("sockeye", "out.jsonl"),
    ("nemo", "out.tsv"), ("hyporadise", "out.json"), ("fields", "out.json"), ("fields", "out.jsonl"),
    ("fields", "out.csv"), ("fields", "out.tsv")]]


def write_blocks(parts: list[NBest], path: Path, fmt: str | None = None, **options) -> None:
    """``parts`` through the block writer (the first block as the list's likeness, as the pipeline gives it)."""
    if options:
        with REGISTRY[fmt or parts[0].fmt].writer(path, parts[0], **options) as write:
            for part in parts:
                write(part)
        return
    with block_writer(path, parts[0], fmt) as write:
        for part in parts:
            write(part)


def cut(nbest: NBest, size: int) -> list[NBest]:
    return [nbest.with_utterances(nbest.utterances[k : k + size]) for k in range(0, len(nbest), size)]


@pytest.mark.parametrize("fmt, name", TARGETS)
@pytest.mark.parametrize("size", [1, 7])
def test_a_list_written_block_by_block_is_the_whole_writers_file(fmt, name, size, tmp_path):
    """A list from elsewhere (ids that stop being record indices, a column that appears part way) in any of these
    formats: the block writer's bytes are the whole writer's."""
    options = {"manifest": tmp_path / "whole.manifest.json"} if fmt == "nemo" else {}
    write_nbest(SYNTHETIC, tmp_path / f"whole.{name}", fmt, **options)
    if fmt == "nemo":
        options = {"manifest": tmp_path / "blocks.manifest.json"}
        write_blocks(cut(SYNTHETIC, size), tmp_path / f"blocks.{name}", fmt, **options)
        assert options["manifest"].read_bytes() == (tmp_path / "whole.manifest.json").read_bytes()
    else:
        write_blocks(cut(SYNTHETIC, size), tmp_path / f"blocks.{name}", fmt)
    assert (tmp_path / f"blocks.{name}").read_bytes() == (tmp_path / f"whole.{name}").read_bytes()


@pytest.mark.parametrize("path, fmt, options", [*LISTS, real_moses()])
def test_a_list_read_and_written_in_blocks_is_written_as_the_whole_list_is(path, fmt, options, tmp_path):
    whole = read_nbest(source(path), fmt, **options)
    written = tmp_path / f"whole{path.suffix}"
    extra = {"manifest": tmp_path / "whole.manifest.json"} if fmt == "nemo" else {}
    write_nbest(whole, written, **extra)
    for size in (1, 7):
        out = tmp_path / f"blocks{size}{path.suffix}"
        extra = {"manifest": tmp_path / f"blocks{size}.manifest.json"} if fmt == "nemo" else {}
        write_blocks(blocks(path, fmt, size, options), out, **extra)
        assert out.read_bytes() == written.read_bytes()
        if fmt == "nemo":
            assert extra["manifest"].read_bytes() == (tmp_path / "whole.manifest.json").read_bytes()


def test_the_records_formats_write_back_their_own_bytes_block_by_block(tmp_path):
    for path, options in [(FIX / "hyporadise" / "test_chime4.json", {}), (FIX / "hyporadise" / "compact.json", {}),
                          (FIX / "fields" / "rows.csv", {"fields": ROWS}), (FIX / "fields" / "rows.jsonl",
                                                                          {"fields": ROWS})]:
        fmt = "fields" if options else "hyporadise"
        write_blocks(blocks(path, fmt, 1, options), tmp_path / path.name)
        assert (tmp_path / path.name).read_bytes() == path.read_bytes()


# ---------------------------------------------------------------- what reading a block at a time keeps
@pytest.mark.parametrize("fmt, name, good, bad", [
    ("moses", "nbest.txt", ["0 ||| a ||| lm: -1 ||| -1", "1 ||| c ||| lm: -2 ||| -2"], "2 ||| d ||| lm: x ||| -3"),
    ("sockeye", "out.jsonl", ['{"sentence_id": 0, "translation": "a", "score": 1}',
                              '{"sentence_id": 1, "translation": "b", "score": 2}'], '{"sentence_id": 2,'),
    ("hyporadise", "hp.json", ["[", '{"input": ["a"], "output": "a"},', '{"input": ["b"], "output": "b"},'],
     '{"input": ["c"] "output": "c"}'),
    ("fields", "rows.csv", ["utt,rank,hyp,ref", "u1,1,a,a", "u2,1,b,b"], "u3,x,c,c"),
])
def test_the_first_block_comes_before_the_rest_of_the_file_is_read(fmt, name, good, bad, tmp_path):
    build(tmp_path, {name: lines(*good, bad)})
    options = {"fields": ROWS} if fmt == "fields" else {}
    found = read_blocks(tmp_path / name, fmt, size=1, **options)
    assert next(found).utterances[0].hyps[0].text == "a"
    with pytest.raises(NBestFormatError) as info:
        list(found)
    check_message(info.value, f"{name}:{len(good) + 1}", "")


FAIRSEQ_BACK = lines("S-1\tx", "H-1\t-0.5\ta", "D-1\t-0.5\ta", "S-0\ty", "H-0\t-0.2\tb", "D-0\t-0.2\tb",
                     "H-1\t-0.7\tc", "D-1\t-0.7\tc")


def test_a_fairseq_sentence_whose_lines_come_back_after_another_is_refused(tmp_path):
    build(tmp_path, {"gen.txt": FAIRSEQ_BACK})
    with pytest.raises(NBestFormatError) as info:
        read_nbest(tmp_path / "gen.txt", "fairseq")
    check_message(info.value, "gen.txt:7", "1")
    assert "two separate blocks" in str(info.value)


def test_fairseq_sentences_in_batch_order_come_in_id_order_block_by_block(tmp_path):
    build(tmp_path, {"gen.txt": lines("S-2\tx", "H-2\t-1\ta", "D-2\t-1\ta", "S-0\ty", "H-0\t-2\tb", "D-0\t-2\tb",
                                      "S-1\tz", "H-1\t-3\tc", "D-1\t-3\tc")})
    found = blocks(tmp_path / "gen.txt", "fairseq", 1, {})
    assert [b.utterances[0].id for b in found] == ["0", "1", "2"]
    assert [b.utterances[0].origin.rpartition(":")[2] for b in found] == ["4", "7", "1"]
    assert found[0].meta == {"log_base": "2"} and found[0].utterances[0].hyps[0].scores["score"] == pytest.approx(
        -2 * 0.6931471805599453)


def test_moses_label_styles_that_change_are_refused_at_the_line(tmp_path):
    build(tmp_path, {"nbest.txt": lines("0 ||| a ||| lm: -1 ||| -1", "0 ||| b ||| lm: -2 ||| -2",
                                        "1 ||| c ||| lm= -3 ||| -3")})
    with pytest.raises(NBestFormatError) as info:
        read_nbest(tmp_path / "nbest.txt", "moses")
    check_message(info.value, "nbest.txt:3", "['colon', 'equals']")


def test_a_hyporadise_score_list_met_part_way_is_a_column_from_there_on(tmp_path):
    text = json.dumps([{"input": ["a", "b"], "output": "a"}, {"input": ["c"], "output": "c", "lm": None},
                       {"input": ["d", "e"], "output": "d", "lm": [-1.5, -2]}], indent=4) + "\n"
    build(tmp_path, {"hp.json": text})
    nbest = read_nbest(tmp_path / "hp.json")
    assert [[h.scores for h in u.hyps] for u in nbest] == [[{}, {}], [{}], [{"lm": -1.5}, {"lm": -2.0}]]
    write_blocks(blocks(tmp_path / "hp.json", "hyporadise", 1, {}), tmp_path / "out.json")
    assert (tmp_path / "out.json").read_text() == text


def test_a_hyporadise_field_held_otherwise_before_it_is_a_score_list_is_refused_where_it_was(tmp_path):
    build(tmp_path, {"hp.json": lines("[", '{"input": ["a", "b"], "output": "a", "lm": "high"},',
                                      '{"input": ["c"], "output": "c"},', '{"input": ["d"], "output": "d", "lm": [-1]}',
                                      "]")})
    with pytest.raises(NBestFormatError) as info:
        read_nbest(tmp_path / "hp.json")
    check_message(info.value, "hp.json:2", "'high'")
    assert "score field 'lm' must be a list of 2 numbers" in str(info.value)


def test_one_record_per_hypothesis_needs_each_utterances_records_together(tmp_path):
    build(tmp_path, {"x.csv": lines("utt,rank,hyp,ref", "u1,1,a,a", "u2,1,b,b", "u1,2,c,a")})
    with pytest.raises(NBestFormatError) as info:
        read_nbest(tmp_path / "x.csv", "fields", fields=ROWS)
    check_message(info.value, "x.csv:4", "'u1'")


def test_one_record_per_hypothesis_ranks_start_where_the_first_utterances_do(tmp_path):
    build(tmp_path, {"x.csv": lines("utt,rank,hyp,ref", "u1,1,a,a", "u1,2,b,a", "u2,0,c,c", "u2,1,d,c")})
    with pytest.raises(NBestFormatError) as info:
        read_nbest(tmp_path / "x.csv", "fields", fields=ROWS)
    check_message(info.value, "x.csv:4", "[0, 1]")
    assert "not 1, 2" in str(info.value)


def test_hyporadise_is_detected_from_its_first_record(tmp_path):
    build(tmp_path, {"hp.json": lines("[", '{"input": ["a"], "output": "a"},', '{"input": ["b"] "output": "b"}', "]")})
    assert detect_format(tmp_path / "hp.json") == "hyporadise"
    with pytest.raises(NBestFormatError) as info:
        read_nbest(tmp_path / "hp.json")
    check_message(info.value, "hp.json:3", '"output"')


# ---------------------------------------------------------------- what writing a block at a time keeps
def failed_write(tmp_path: Path, parts: list[NBest], fmt: str, **options) -> NBestFormatError:
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(NBestFormatError) as info:
        write_blocks(parts, out / "list", fmt, **{k: out / v for k, v in options.items()})
    assert list(out.iterdir()) == []
    return info.value


def test_an_id_given_again_in_a_later_block_is_refused_and_nothing_is_left(tmp_path):
    err = failed_write(tmp_path, [SYNTHETIC.with_utterances(SYNTHETIC.utterances[:2]),
                                  SYNTHETIC.with_utterances(SYNTHETIC.utterances[1:3])], "sockeye")
    check_message(err, "list", "'1'")
    assert "duplicate utterance id" in str(err)


def test_nemo_blocks_of_other_beam_sizes_are_refused_and_neither_file_is_left(tmp_path):
    short = SYNTHETIC.with_utterances([SYNTHETIC.utterances[1].with_hyps(SYNTHETIC.utterances[1].hyps[:2])])
    err = failed_write(tmp_path, [SYNTHETIC.with_utterances(SYNTHETIC.utterances[:1]), short], "nemo",
                       manifest="manifest.json")
    check_message(err, "list", "[2, 3]")


def test_moses_features_named_after_unlabelled_lines_are_refused(tmp_path):
    plain = NBest((Utterance("0", (Hypothesis("a", {"f_0": -1.0, "f_1": -2.0, "total": -3.0}),)),), fmt="moses",
                  meta={"labels": "none"})
    named = plain.with_utterances([Utterance("1", (Hypothesis("b", {"lm": -1.0, "total": -1.0}),))])
    err = failed_write(tmp_path, [plain, named], "moses")
    check_message(err, "list", "['lm']")
    write_nbest(plain.with_utterances([*plain.utterances, *named.utterances]), tmp_path / "whole.txt")
    assert (tmp_path / "whole.txt").read_text() == lines("0 ||| a ||| f= -1.0 -2.0 ||| -3.0",
                                                         "1 ||| b ||| lm= -1.0 ||| -1.0")  # the whole list: labels


# ---------------------------------------------------------------- JSON a piece at a time
JSON_TEXTS = [b"[]", b"[ ]\n", b'[1, "a,]", {"b": [1, {"c": "]"}]}, null]', b'[\n  {"a": "x\\"y\\u00e9"},\n  []\n]\n',
              b"\xef\xbb\xbf[\n{}]", "[\n 1.5e3,\n \"日本\"]".encode(), b"[1,]", b"[,1]", b"[1 2]",
              b'[{"a": 1} {"b": 2}]', b'[{"a": 1}', b"[", b"", b" \n", b'{"a": 1}', b'{"a": ', b"[1] x", b"[1]]",
              b"[NaN]", b'["a\xff"]', b'[{"a": "\\ud800"}]']


@pytest.mark.parametrize("window", [1, 3, 7, 1 << 20])
def test_a_json_list_is_read_item_by_item_as_the_whole_document_reads(window, tmp_path, monkeypatch):
    """The same items, and the same errors at the same lines, as decoding the whole document (windows of a few
    bytes cut every string, number and character)."""
    monkeypatch.setattr(codec, "CHUNK", window)
    path = tmp_path / "x.json"
    for data in JSON_TEXTS:
        path.write_bytes(data)
        try:
            whole = load_json(read_text(path), path)
        except NBestFormatError as err:
            with pytest.raises(NBestFormatError) as info:
                list(codec.json_items(path))
            assert (info.value.line, str(info.value)) == (err.line, str(err)), data
            continue
        if isinstance(whole, list):
            assert [value for _, value in codec.json_items(path)] == whole, data
        else:
            with pytest.raises(NBestFormatError, match="1: expected a JSON list"):
                list(codec.json_items(path))


def test_each_item_of_a_json_list_is_at_the_line_it_starts_on(tmp_path, monkeypatch):
    monkeypatch.setattr(codec, "CHUNK", 2)
    (tmp_path / "x.json").write_text('[\n  {"a": 1},\n\n  2, [\n3]\n  ,\n"x"]\n')
    assert list(codec.json_items(tmp_path / "x.json")) == [(2, {"a": 1}), (4, 2), (4, [3]), (7, "x")]


@pytest.mark.parametrize("indent", [None, 0, 1, 4])
@pytest.mark.parametrize("ascii_only", [True, False])
def test_a_json_list_written_a_piece_at_a_time_is_the_documents_text(indent, ascii_only):
    values = [{"a": [1, {"b": "é\n"}], "c": None}, [], {}, "x", -1.5, [[]], {"k": {}}]
    for count in range(len(values) + 1):
        whole = document(values[:count], indent, ascii_only)
        for split in range(count + 1):
            pieces = (document_items(values[:split], indent, ascii_only, True)
                      + document_items(values[split:count], indent, ascii_only, split == 0)
                      + document_end(indent, count == 0) + "\n")
            assert pieces == whole
