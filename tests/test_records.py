"""HyPoradise JSON and the field-mapping reader (``fmt=fields``) on hand-made fixtures
(tests/fixtures/formats/hyporadise, fields): hand-counted contents, byte-identical write-back, the 1-best WER jiwer
gives, the same NBest from JSONL and CSV, the command line, and file:line errors."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import jiwer
import msgspec
import pytest

import rescorer
from rescorer.io import detect_format
from rescorer.io.records import Fields
from rescorer.io.sets import Corpus
from rescorer.metrics import make_metric
from rescorer.pipeline import evaluate

from .test_malformed import build, check_message, lines

FIX = Path(__file__).parent / "fixtures" / "formats"
HYPORADISE = FIX / "hyporadise" / "test_chime4.json"
COMPACT = FIX / "hyporadise" / "compact.json"
ROWS = {"id": "utt", "rank": "rank", "hyps": "hyp", "ref": "ref", "scores": ["am"]}
RECORDS = {"id": "key", "hyps": "nbest", "ref": "truth", "scores": ["am"]}

# hand-counted: id → (reference, [(hypothesis, am score or None)])
EXPECTED = {
    "F01_050C0101_BUS": ("the cat sat on the mat", [("the cat sat on the mat", -12.5), ("the cat sat on a mat", -13.25),
                                                    ("a cat sat on the mat", -14.0)]),
    "1": ("hello there world", [("hello world", None), ("", None)]),
    "7": ("café crème brûlée au sucre", [("café crème brûlée", -0.3), ("cafe creme brulee", 0.0), ("日本語 の 文", -1.5)]),
}


def content(nbest, column: str) -> dict:
    """id → (reference, [(text, the column or None)]), every other column absent."""
    out = {}
    for utt in nbest:
        assert all(set(h.scores) <= {column} for h in utt.hyps)
        out[utt.id] = (utt.ref, [(h.text, h.scores.get(column)) for h in utt.hyps])
    return out


def test_hyporadise_fixture_as_hand_counted():
    assert detect_format(HYPORADISE) == detect_format(COMPACT) == "hyporadise"
    nbest = rescorer.read_nbest(HYPORADISE)
    assert nbest.fmt == "hyporadise" and content(nbest, "am_score") == EXPECTED
    assert [u.origin.rpartition(":")[2] for u in nbest] == ["2", "17", "25"]  # the line each record starts on
    assert nbest.utterances[0].hyps[2].raw == {"am_score": "-14"}  # an integer stays one when written back
    assert "instruction" not in nbest.columns and nbest.columns == ["am_score"]


@pytest.mark.parametrize("path", [HYPORADISE, COMPACT], ids=["indented-ascii", "one-line-unicode"])
def test_hyporadise_writes_back_identically(path, tmp_path):
    nbest = rescorer.read_nbest(path)
    rescorer.write_nbest(nbest, tmp_path / "out.json")
    assert (tmp_path / "out.json").read_bytes() == path.read_bytes()
    assert rescorer.read_nbest(tmp_path / "out.json") == replace(nbest, source=str(tmp_path / "out.json"))


def test_hyporadise_reranked_keeps_every_key_in_place(tmp_path):
    nbest = rescorer.read_nbest(HYPORADISE)
    flipped = nbest.with_utterances([replace(u, hyps=u.hyps[::-1]) for u in nbest])
    rescorer.write_nbest(flipped, tmp_path / "out.json")
    before, after = json.loads(HYPORADISE.read_text()), json.loads((tmp_path / "out.json").read_text())
    assert [list(r) for r in after] == [list(r) for r in before]  # same keys, same order
    for old, new in zip(before, after):
        assert new["input"] == old["input"][::-1]
        if "am_score" in old:
            assert new["am_score"] == old["am_score"][::-1]
        assert {k: v for k, v in new.items() if k not in ("input", "am_score")} == \
            {k: v for k, v in old.items() if k not in ("input", "am_score")}  # instruction, output, id (7 an int)


def test_hyporadise_1best_wer_is_jiwers(tmp_path):
    nbest = rescorer.read_nbest(HYPORADISE)
    refs, best = nbest.refs(), [u.hyps[0].text for u in nbest]
    assert rescorer.wer(refs, best) == pytest.approx(100 * jiwer.wer(refs, best), abs=1e-10)  # percent
    corpus = Corpus("hp", {"test": {"nbest": str(HYPORADISE)}}, {"name": "wer"})
    report = evaluate({"test": corpus.sets["test"].read()}, make_metric("wer"), tmp_path / "out", "hp")
    assert report.sets["test"].baseline["wer"] == pytest.approx(100 * jiwer.wer(refs, best), abs=1e-9)
    assert report.sets["test"].format == "hyporadise"


@pytest.mark.parametrize("name, spec", [("rows.jsonl", ROWS), ("rows.csv", ROWS), ("records.jsonl", RECORDS)])
def test_fields_read_the_same_nbest_from_jsonl_and_csv(name, spec, tmp_path):
    nbest = rescorer.read_nbest(FIX / "fields" / name, "fields", fields=spec)
    assert nbest.fmt == "fields" and content(nbest, "am") == EXPECTED
    hyporadise = rescorer.read_nbest(HYPORADISE)
    renamed = hyporadise.with_utterances([replace(u, meta={}, hyps=tuple(
        msgspec.structs.replace(h, scores={"am": v for v in h.scores.values()}, raw={}, meta={}) for h in u.hyps)) for u in hyporadise])
    plain = nbest.with_utterances([replace(u, meta={}, hyps=tuple(msgspec.structs.replace(h, raw={}, meta={}) for h in u.hyps))
                                   for u in nbest])
    assert plain.utterances == renamed.utterances  # the same NBest, apart from what each file keeps to write back
    rescorer.write_nbest(nbest, tmp_path / name)
    assert (tmp_path / name).read_bytes() == (FIX / "fields" / name).read_bytes()


def test_fields_convert_between_containers(tmp_path):
    rows = rescorer.read_nbest(FIX / "fields" / "rows.csv", "fields", fields=ROWS)
    rescorer.write_nbest(rows, tmp_path / "out.tsv", "fields", fields={**ROWS, "container": "tsv"})
    assert content(rescorer.read_nbest(tmp_path / "out.tsv", "fields", fields=ROWS), "am") == EXPECTED
    rescorer.write_nbest(rows, tmp_path / "out.json", "hyporadise", score_column="am")
    assert content(rescorer.read_nbest(tmp_path / "out.json"), "am_score") == EXPECTED
    rescorer.write_nbest(rescorer.read_nbest(HYPORADISE), tmp_path / "records.jsonl", "fields")  # default mapping
    back = rescorer.read_nbest(tmp_path / "records.jsonl", "fields",
                               fields={"id": "id", "hyps": "hyps", "ref": "ref", "scores": ["am_score"]})
    assert content(back, "am_score") == EXPECTED


def test_fields_and_hyporadise_from_the_command_line(tmp_path):
    """``fmt=fields`` with the mapping as NBestSet options, and HyPoradise detected, through ``task=evaluate``."""
    mapping = "{fields: {id: utt, rank: rank, hyps: hyp, ref: ref, scores: [am]}}"
    command = [sys.executable, "-m", "rescorer", "task=evaluate", "data=own", f"out_dir={tmp_path}/out",
               f"data.sets.dev.nbest={FIX / 'fields' / 'rows.csv'}", "data.sets.dev.fmt=fields",
               f"+data.sets.dev.options={mapping}", f"data.sets.test.nbest={HYPORADISE}"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    refs = [ref for ref, _ in EXPECTED.values()]
    best = [hyps[0][0] for _, hyps in EXPECTED.values()]
    for name, fmt in (("dev", "fields"), ("test", "hyporadise")):
        assert report["sets"][name]["format"] == fmt
        assert report["sets"][name]["baseline"]["wer"] == pytest.approx(100 * jiwer.wer(refs, best), abs=1e-9)


def test_rescored_hyporadise_is_written_back_as_hyporadise(tmp_path):
    result = rescorer.rescore(dev=COMPACT, base="am_score", columns={"words": {"range": [0, 1], "step": 1}},
                              out_dir=tmp_path / "out", bootstrap=10)
    written = Path(result.report.sets["dev"].outputs["native"])
    assert written.name == "compact.json" and rescorer.detect_format(written) == "hyporadise"
    back = rescorer.read_nbest(written)
    assert [[h.text for h in u.hyps] for u in back] == [[h.text for h in u.hyps] for u in result.nbests["dev"]]
    assert json.loads(written.read_text())[1]["lang"] == {"code": "fr", "ok": True}
    record = json.loads(written.read_text())[0]  # the re-ranked list carries its new columns, as every format can
    assert len(record["rescore"]) == len(record["input"])
    assert [h.scores["rescore"] for h in back.utterances[0].hyps] == [
        h.scores["rescore"] for h in result.nbests["dev"].utterances[0].hyps]


# ---------------------------------------------------------------- errors name the file and line
HP_OK = '{"input": ["a b", "a c"], "output": "a b", "am_score": [-1.0, -2.0]}'
BAD = [
    ("hp-score-length", {"x.json": lines("[", HP_OK + ",", '{"input": ["a"], "output": "a", "am_score": [-1, -2]}',
                                         "]")}, "hyporadise", {}, "x.json:3", "[-1, -2]"),
    ("hp-input-not-a-list", {"x.json": lines("[", '{"input": "a b", "output": "a b"}', "]")}, "hyporadise", {},
     "x.json:2", "'a b'"),
    ("hp-score-not-a-number", {"x.json": lines("[", '{"input": ["a"], "output": "a", "am_score": [true]}', "]")},
     "hyporadise", {}, "x.json:2", "True"),
    ("hp-score-nan", {"x.json": lines("[", '{"input": ["a"], "output": "a", "am_score": ["nan"]}', "]")},
     "hyporadise", {}, "x.json:2", "nan"),
    ("hp-duplicate-id", {"x.json": lines("[", '{"id": "u", "input": ["a"], "output": "a"},',
                                         '{"id": "u", "input": ["b"], "output": "b"}', "]")}, "hyporadise", {},
     "x.json:3", "'u'"),
    ("hp-output-not-a-string", {"x.json": lines("[", '{"input": ["a"], "output": ["a"]}', "]")}, "hyporadise", {},
     "x.json:2", "['a']"),
    ("hp-not-a-list", {"x.json": lines('{"input": ["a"], "output": "a"}')}, "hyporadise", {}, "x.json:1",
     "expected a JSON list"),
    ("hp-invalid-json", {"x.json": lines("[", HP_OK + ",", '{"input": ["a"] "output": "a"}', "]")}, "hyporadise", {},
     "x.json:3", '"output"'),
    ("csv-no-rank", {"x.csv": lines("utt,rank,hyp,ref", "u1,1,a b,a b", "u1,,a c,a b")}, "fields", ROWS, "x.csv:3",
     "rank"),
    ("csv-rank-twice", {"x.csv": lines("utt,rank,hyp,ref", "u1,1,a b,a b", "u1,1,a c,a b")}, "fields", ROWS,
     "x.csv:2", "[1, 1]"),
    ("csv-rank-gap", {"x.csv": lines("utt,rank,hyp,ref", "u1,1,a b,a b", "u1,3,a c,a b")}, "fields", ROWS,
     "x.csv:2", "[1, 3]"),
    ("csv-two-refs", {"x.csv": lines("utt,rank,hyp,ref", "u1,1,a b,a b", "u1,2,a c,a c")}, "fields", ROWS,
     "x.csv:3", "u1"),
    ("csv-score-text", {"x.csv": lines("utt,rank,hyp,ref,am", "u1,1,a b,a b,-1", "u1,2,a c,a b,high")}, "fields",
     ROWS, "x.csv:3", "high"),
    ("csv-short-row", {"x.csv": lines("utt,rank,hyp,ref", "u1,1,a b,a b", "u1,2,a c")}, "fields", ROWS, "x.csv:3",
     "3 fields for 4 columns"),
    ("csv-no-id", {"x.csv": lines("utt,rank,hyp,ref", "u1,1,a b,a b", ",2,a c,a b")}, "fields", ROWS, "x.csv:3",
     "'utt'"),
    ("jsonl-no-text-field", {"x.jsonl": lines('{"utt": "u1", "rank": 1, "ref": "a"}')}, "fields", ROWS, "x.jsonl:1",
     "'hyp'"),
    ("jsonl-records-score-length", {"x.jsonl": lines('{"key": "u1", "nbest": ["a"], "truth": "a", "am": [-1]}',
                                                     '{"key": "u2", "nbest": ["a"], "truth": "a", "am": []}')},
     "fields", RECORDS, "x.jsonl:2", "[]"),
]


@pytest.mark.parametrize("name, files, fmt, spec, where, value", BAD, ids=[b[0] for b in BAD])
def test_malformed_records_name_file_and_line(tmp_path, name, files, fmt, spec, where, value):
    build(tmp_path, files)
    options = {"fields": spec} if fmt == "fields" else {}
    with pytest.raises(rescorer.NBestFormatError) as info:
        rescorer.read_nbest(tmp_path / next(iter(files)), fmt, **options)
    check_message(info.value, where, value)


@pytest.mark.parametrize("spec, message", [
    ({"hyps": "h", "colums": ["a"]}, "unknown fields key 'colums' (choose from container, hyps, id, rank, ref, scores)"),
    ({"hyps": "h", "rank": "r"}, "needs fields.id"),
    ({"hyps": "h", "ref": "h"}, "each field once"),
    ({"hyps": 3}, "fields.hyps must name a field"),
    ({"hyps": "h", "container": "xml"}, "container one of"),
])
def test_bad_field_mappings_are_config_errors(spec, message, tmp_path):
    (tmp_path / "x.jsonl").write_text('{"h": ["a"]}\n')
    with pytest.raises(rescorer.ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        rescorer.read_nbest(tmp_path / "x.jsonl", "fields", fields=spec)


def test_writer_refuses_what_the_mapping_cannot_hold(tmp_path):
    nbest = rescorer.read_nbest(FIX / "fields" / "rows.jsonl", "fields", fields=ROWS)
    ragged = nbest.with_utterances([replace(nbest.utterances[0], hyps=(nbest.utterances[0].hyps[0],
                                                                        msgspec.structs.replace(nbest.utterances[0].hyps[1], scores={})))])
    with pytest.raises(rescorer.NBestFormatError, match="missing from some hypotheses"):
        rescorer.write_nbest(ragged, tmp_path / "a.json", "hyporadise", score_column="am")
    with pytest.raises(rescorer.NBestFormatError, match="record index"):
        rescorer.write_nbest(nbest, tmp_path / "b.jsonl", "fields", fields={"hyps": "h"})
    empty = nbest.with_utterances([replace(nbest.utterances[0], hyps=())])
    with pytest.raises(rescorer.NBestFormatError, match="no hypotheses"):
        rescorer.write_nbest(empty, tmp_path / "c.csv", "fields", fields=ROWS)
    assert list(tmp_path.iterdir()) == []
    assert Fields.of(ROWS).scores == ("am",)


def test_a_list_without_scores_is_rescored_with_its_order_as_the_base(tiny_causal, tmp_path):
    """Texts only, in the toolkit's order: the order becomes the column ``rank`` (−ln(1 + position)), the base
    that the LM re-ranks; without an LM column the 1-bests stay as given."""
    import math

    records = [{"input": ["the cat sat on the mat", "the cat sat on a mat", "a cat sat on the mat"],
                "output": "the cat sat on the mat"},
               {"input": ["hello word", "hello world"], "output": "hello world"},
               {"input": ["good morning", "good mourning", "could morning"], "output": "good morning"}]
    path = tmp_path / "texts.json"
    path.write_text(json.dumps(records))
    plain = rescorer.rescore(sets={"dev": str(path)}, columns={}, bootstrap=10)
    assert plain.report.base == "rank" and "base:rank" in plain.report.signature
    assert [u.hyps[0].text for u in plain.nbests["dev"]] == [r["input"][0] for r in records]
    result = rescorer.rescore(sets={"dev": str(path)}, scorers={"ll": {"kind": "ll", "model": str(tiny_causal)}},
                              bootstrap=10)
    assert result.report.base == "rank"
    for record, utterance in zip(records, result.nbests["dev"]):
        for hyp in utterance.hyps:
            assert hyp.scores["rank"] == -math.log1p(record["input"].index(hyp.text))
            assert hyp.scores["rescore"] == pytest.approx(hyp.scores["rank"] + result.weights["ll"] * hyp.scores["ll"])
