"""``task=convert``: N-best lists converted to another format and back unchanged, cut to their best hypotheses, every
k-th utterance kept, split into shards; bad options refused in one line, inputs never written."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import rescorer
from rescorer.errors import ConfigError
from rescorer.io import read_nbest
from rescorer.types import NBest

from .conftest import DEMO, ROOT
from .test_output_safety import assert_refused_leaving_all_as_it_was, rescorer_cli

FORMATS = ROOT / "tests" / "fixtures" / "formats"
# each toolkit's list, and the name its canonical JSONL gets
LISTS = {"espnet2": (DEMO / "test_clean", "test_clean.jsonl"),
         "fairseq": (FORMATS / "fairseq" / "generate-test.v0.9.txt", "generate-test.v0.9.jsonl"),
         "moses": (FORMATS / "moses" / "nbest.txt", "nbest.jsonl")}


def hypotheses(nbest: NBest) -> list[tuple]:
    """Every utterance's id and reference, and each of its hypotheses' text and scores, in order."""
    return [(u.id, u.ref, [(h.text, h.scores) for h in u.hyps]) for u in nbest]


@pytest.mark.parametrize("fmt", sorted(LISTS))
def test_a_list_converted_to_jsonl_and_back_is_the_same_hypothesis_by_hypothesis(fmt, tmp_path):
    source, name = LISTS[fmt]
    rescorer.convert(source, tmp_path / "jsonl")
    rescorer.convert(tmp_path / "jsonl" / name, tmp_path / "back", to=fmt)
    back = tmp_path / "back" / (source.name if source.is_file() else Path(name).stem)
    original = read_nbest(source)
    assert read_nbest(tmp_path / "jsonl" / name).fmt == "jsonl"
    assert hypotheses(read_nbest(tmp_path / "jsonl" / name)) == hypotheses(original)
    assert read_nbest(back).fmt == fmt and hypotheses(read_nbest(back)) == hypotheses(original)


def test_the_command_line_converts_and_says_what_it_wrote_in_one_line(tmp_path):
    result = rescorer_cli(tmp_path, "task=convert", f"task.inputs={LISTS['moses'][0]}", "out_dir=out")
    assert result.returncode == 0, result.stderr
    said = "converted 1 list(s) to jsonl: 2 utterances, 5 hypotheses in 1 file(s) in out"
    assert result.stdout.splitlines() == [said], result.stdout
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".converted.json", "nbest.jsonl"]
    assert hypotheses(read_nbest(tmp_path / "out" / "nbest.jsonl")) == hypotheses(read_nbest(LISTS["moses"][0]))


def test_top_and_every_keep_what_they_say(tmp_path):
    summary = rescorer.convert(DEMO / "test_clean", tmp_path / "out", top=3, every=7)
    whole = list(read_nbest(DEMO / "test_clean"))
    kept = list(read_nbest(tmp_path / "out" / "test_clean.jsonl"))
    assert [u.id for u in kept] == [whole[k].id for k in range(0, 300, 7)]  # the 1st, 8th, 15th, …: 43 of 300
    assert len(kept) == 43 and all(u.hyps == w.hyps[:3] for u, w in zip(kept, whole[::7]))
    assert summary["outputs"]["test_clean.jsonl"] == {"input": str(DEMO / "test_clean"), "utterances": 43,
                                                      "hypotheses": 43 * 3}


def test_shards_hold_about_equal_counts_that_together_are_the_unsharded_output(tmp_path):
    rescorer.convert(DEMO / "test_clean", tmp_path / "whole", every=3)
    summary = rescorer.convert(DEMO / "test_clean", tmp_path / "parts", every=3, shards=4)
    names = [f"test_clean-0000{k}-of-00004.jsonl" for k in range(4)]
    assert sorted(p.name for p in (tmp_path / "parts").iterdir()) == [".converted.json", *names]
    counts = [summary["outputs"][name]["utterances"] for name in names]
    assert sum(counts) == 100 and max(counts) - min(counts) <= 1
    joined = [u for name in names for u in read_nbest(tmp_path / "parts" / name)]
    assert hypotheses(read_nbest(tmp_path / "whole" / "test_clean.jsonl")) == hypotheses(NBest(joined, fmt="jsonl"))
    # the folder of shards is itself the input of the next convert, each shard its own output
    rescorer.convert(tmp_path / "parts", tmp_path / "back", to="espnet2")
    assert sorted(p.name for p in (tmp_path / "back").iterdir()) == [".converted.json", *(n[:-6] for n in names)]


def test_a_convert_replaces_only_an_earlier_converts_out_dir(tmp_path):
    rescorer.convert(LISTS["moses"][0], tmp_path / "out")
    rescorer.convert(LISTS["fairseq"][0], tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".converted.json", "generate-test.v0.9.jsonl"]
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "report.json").write_text("{}")
    with pytest.raises(ConfigError, match="holds an earlier run's outputs"):
        rescorer.convert(LISTS["moses"][0], tmp_path / "run")


BAD = {"an unknown output format": (["task.to=mose"], ["task.to", "'mose'", "did you mean 'moses'", "jsonl"]),
       "an unknown input format": (["task.fmt=espnet"], ["task.fmt", "'espnet'", "auto", "espnet2"]),
       "no shards": (["task.shards=0"], ["task.shards must be an integer in [1, 99999], not 0"]),
       "more shards than utterances": (["task.shards=3"], ["task.shards=3 is more than the 2 utterances", "at most 2"]),
       "top as a word": (["task.top=all"], ["task.top must be an integer ≥ 1 or null, not 'all'"]),
       "every zero": (["task.every=0"], ["task.every must be an integer ≥ 1, not 0"]),
       "no inputs": (["task.inputs=null"], ["task.inputs is not set"])}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_options_are_one_line_naming_the_key_and_leave_everything_as_it_was(case, tmp_path):
    shutil.copy(LISTS["moses"][0], tmp_path / "nbest.txt")
    overrides, expected = BAD[case]
    assert_refused_leaving_all_as_it_was(tmp_path, "task=convert", "task.inputs=nbest.txt", "out_dir=out", *overrides,
                                         expected=tuple(expected))
    assert not (tmp_path / "out").exists()


def test_an_out_dir_inside_the_inputs_is_refused(tmp_path):
    rescorer.convert(LISTS["moses"][0], tmp_path / "parts")
    assert_refused_leaving_all_as_it_was(tmp_path, "task=convert", "task.inputs=parts", "out_dir=parts/back",
                                         expected=("out_dir=parts/back is inside parts, which this run reads",))
    assert json.loads((tmp_path / "parts" / ".converted.json").read_text())["task"] == "convert"
