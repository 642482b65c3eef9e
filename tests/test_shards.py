"""A corpus of any size applied shard by shard: each input re-ranked in its own format exactly as the in-memory apply
writes it, recordings never split across chunks, a killed run resumed without touching finished shards, an input
whose content changed done again whatever its size and time say, and an out_dir of another job refused."""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
from msgspec.structs import replace

import rescorer
from rescorer.errors import ConfigError
from rescorer.files import record_text, record_value
from rescorer.io import write_nbest
from rescorer.io.inputs import named_inputs
from rescorer.pipeline.stream import pieces
from rescorer.report import Report
from rescorer.types import Hypothesis, NBest, Utterance

from .conftest import DEMO, RAY_ENV, ROOT

FORMATS = ROOT / "tests" / "fixtures" / "formats"
LL_CONTEXT = {"kind": "ll", "context": {"utterances": 2}}


def tree(path: Path) -> dict[str, bytes]:
    """Every file under ``path`` (or the file itself) by relative name, with its bytes."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return {str(p.relative_to(path)) if p != path else p.name: p.read_bytes() for p in files}


def tuned_on(path: Path, model: Path, out: Path, source: str = "first_pass") -> Path:
    """A tuned.yaml from ``path`` (with its references) and the tiny causal LM reading the 1-bests of ``source``
    as context."""
    scorer = {"kind": "ll", "model": str(model), "context": {"utterances": 2, "source": source}}
    rescorer.rescore(sets={"dev": {"nbest": str(path)}}, scorers={"ll": scorer}, engine={"progress": False},
                     bootstrap=10, out_dir=out)
    return out / "tuned.yaml"


@pytest.fixture(scope="module")
def demo_shards(tmp_path_factory) -> Path:
    """Two ESPnet decode directories cut from the demo (each recording's utterances together, 5-best)."""
    root = tmp_path_factory.mktemp("demo_shards")
    nbest = rescorer.read_nbest(DEMO / "test_clean", refs=DEMO / "test_clean" / "ref.trn")
    cut = [u.with_hyps(u.hyps[:5]) for u in nbest][:40]
    for k, part in enumerate((cut[:20], cut[20:])):
        write_nbest(nbest.with_utterances(part), root / "shards" / f"split{k}", "espnet2")
    write_nbest(nbest.with_utterances(cut), root / "dev.jsonl", "jsonl")
    return root


@pytest.fixture(scope="module")
def tuned(demo_shards, tiny_causal) -> Path:
    return tuned_on(demo_shards / "dev.jsonl", tiny_causal, demo_shards / "tuned")


def test_a_directory_of_decode_directories_is_applied_as_the_in_memory_apply_writes_each(demo_shards, tiny_causal,
                                                                                         tmp_path):
    tuned = tuned_on(demo_shards / "dev.jsonl", tiny_causal, tmp_path / "tuned", source="rescored")
    inputs = list(named_inputs(demo_shards / "shards"))
    assert [p.name for p in inputs] == ["split0", "split1"]
    rescorer.apply(None, tuned, inputs=demo_shards / "shards", out_dir=tmp_path / "sharded",
                   engine={"progress": False})
    for path in inputs:
        rescorer.apply({"one": str(path)}, tuned, out_dir=tmp_path / f"whole-{path.name}",
                       engine={"progress": False}, bootstrap=10)
        assert tree(tmp_path / "sharded" / "shards" / path.name) == tree(tmp_path / f"whole-{path.name}" / "one"
                                                                          / "nbest")
    report = json.loads((tmp_path / "sharded" / "report.json").read_text())
    assert [s["utterances"] for s in report["sets"].values()] == [20, 20]
    changed = sum(a != b for path in inputs for a, b in zip(
        rescorer.read_nbest(path).select([0] * 20),
        rescorer.read_nbest(tmp_path / "sharded" / "shards" / path.name).select([0] * 20)))
    assert sum(s["changed_1best"] for s in report["sets"].values()) == changed


@pytest.mark.parametrize("source", ["fairseq/generate-test.v0.9.txt", "hyporadise/compact.json"])
def test_a_translation_and_a_hyporadise_list_are_applied_as_the_in_memory_apply_writes_them(source, tiny_causal,
                                                                                            tmp_path):
    path = shutil.copy(FORMATS / source, tmp_path / Path(source).name)
    tuned = tuned_on(Path(path), tiny_causal, tmp_path / "tuned")
    rescorer.apply(None, tuned, inputs=[path], out_dir=tmp_path / "sharded", engine={"progress": False})
    rescorer.apply({"one": path}, tuned, out_dir=tmp_path / "whole", engine={"progress": False}, bootstrap=10)
    assert tree(tmp_path / "sharded" / "shards" / Path(path).name) == tree(tmp_path / "whole" / "one"
                                                                           / Path(path).name)


def recording_list(owners: list[str]) -> NBest:
    return NBest([Utterance(f"{owner}-{k}", (Hypothesis("A", {"score": 0.0}),)) for k, owner in enumerate(owners)])


def test_pieces_keep_every_recording_whole_and_cut_as_soon_as_they_may(tiny_causal):
    scorer = rescorer.load_scorer("ll", str(tiny_causal), context={"utterances": 1}, progress=False)
    owners = ["a", "a", "b", "a", "c", "c", "d", "e", "e", "e", "f"]
    found = [[u.id.split("-")[0] for u in part] for part in pieces([recording_list(owners)], {"ll": scorer}, 2)]
    assert found == [["a", "a", "b", "a"], ["c", "c"], ["d", "e", "e", "e"], ["f"]]  # a comes back after b
    plain = rescorer.load_scorer("ll", str(tiny_causal), progress=False)
    assert [len(part) for part in pieces([recording_list(owners)], {"ll": plain}, 4)] == [4, 4, 3]
    blocks = [recording_list(["a", "a", "b"]), recording_list(["b", "a"])]  # a comes back in a later block
    with pytest.raises(rescorer.RescorerError, match="continues recording 'a' after other recordings"):
        list(pieces(blocks, {"ll": scorer}, 1))
    assert [len(part) for part in pieces(blocks, {"ll": plain}, 2)] == [2, 2, 1]


def test_chunked_scoring_ranks_as_a_whole_shard_does(demo_shards, tuned, tmp_path):
    for chunk, out in ((3, "small"), (10_000, "whole")):
        rescorer.apply(None, tuned, inputs=[demo_shards / "dev.jsonl"], out_dir=tmp_path / out, chunk=chunk,
                       engine={"progress": False})
    small, whole = (rescorer.read_nbest(tmp_path / out / "shards" / "dev.jsonl") for out in ("small", "whole"))
    assert [[h.text for h in u.hyps] for u in small] == [[h.text for h in u.hyps] for u in whole]
    np.testing.assert_allclose(small.column_array("rescore"), whole.column_array("rescore"), atol=1e-4)


KILL_AFTER_OUTPUT = """
import os, signal, sys
from pathlib import Path
import rescorer
from rescorer.pipeline import shards

done, calls = shards.Shards.done, []

def done_then_die(place, name, applied):
    calls.append(name)
    if len(calls) == int(sys.argv[3]):  # the output written, its record not yet: killed at the worst moment
        os.kill(os.getpid(), signal.SIGKILL)
    done(place, name, applied)

shards.Shards.done = done_then_die
rescorer.apply(None, sys.argv[1], inputs=sys.argv[2], out_dir=sys.argv[4], engine={"progress": False})
"""


def digests(root: Path) -> dict[str, tuple[int, str]]:
    """Each output under ``root/shards``: when it was written and a hash of its bytes (a directory: of its files')."""
    return {p.name: (p.stat().st_mtime_ns, hashlib.sha256(repr(tree(p)).encode()).hexdigest())
            for p in sorted((root / "shards").iterdir())}


@pytest.fixture(scope="module")
def tuned_on_columns(demo_shards) -> Path:
    """A tuned.yaml on the lists' own columns, no LM: its JSONL shards are re-ranked line by line."""
    rescorer.rescore(sets={"dev": {"nbest": str(demo_shards / "dev.jsonl")}}, columns={"ctc": {}, "lm": {}},
                     bootstrap=10, out_dir=demo_shards / "tuned_on_columns")
    return demo_shards / "tuned_on_columns" / "tuned.yaml"


@pytest.mark.parametrize("weights", ["tuned", "tuned_on_columns"])  # with an LM reading context; line by line
def test_a_killed_apply_reruns_only_unfinished_shards_and_ends_as_an_uninterrupted_one(demo_shards, weights,
                                                                                      request, tmp_path):
    tuned = request.getfixturevalue(weights)
    nbest = rescorer.read_nbest(demo_shards / "dev.jsonl")
    for k in range(20):
        write_nbest(nbest.with_utterances(nbest.utterances[2 * k : 2 * k + 2]), tmp_path / "in" / f"{k:02d}.jsonl")
    killed = subprocess.run([sys.executable, "-c", KILL_AFTER_OUTPUT, str(tuned), str(tmp_path / "in"), "8",
                             str(tmp_path / "resumed")], capture_output=True, text=True, timeout=300)
    assert killed.returncode == -9, killed.stderr
    before = digests(tmp_path / "resumed")
    assert len(before) == 8 and len(list((tmp_path / "resumed" / "done").iterdir())) == 7
    rescorer.apply(None, tuned, inputs=tmp_path / "in", out_dir=tmp_path / "resumed", engine={"progress": False})
    after = digests(tmp_path / "resumed")
    assert {name: after[name] for name in list(before)[:7]} == {name: before[name] for name in list(before)[:7]}
    assert after["07.jsonl"][0] != before["07.jsonl"][0]  # written, unrecorded: done again
    rescorer.apply(None, tuned, inputs=tmp_path / "in", out_dir=tmp_path / "straight", engine={"progress": False})
    assert tree(tmp_path / "resumed" / "shards") == tree(tmp_path / "straight" / "shards")
    report = json.loads((tmp_path / "resumed" / "report.json").read_text())
    assert report["sets"] == json.loads((tmp_path / "straight" / "report.json").read_text())["sets"] | {
        name: {**entry, "outputs": {"native": entry["outputs"]["native"]}} for name, entry in report["sets"].items()}
    assert len(report["sets"]) == 20 and sum(s["utterances"] for s in report["sets"].values()) == 40


def test_an_output_changed_after_its_record_is_done_again_and_the_others_are_kept(demo_shards, tuned_on_columns,
                                                                                 tmp_path):
    nbest = rescorer.read_nbest(demo_shards / "dev.jsonl")
    for k in range(3):
        write_nbest(nbest.with_utterances(nbest.utterances[2 * k : 2 * k + 2]), tmp_path / "in" / f"{k}.jsonl")
    out = tmp_path / "out"
    rescorer.apply(None, tuned_on_columns, inputs=tmp_path / "in", out_dir=out, engine={"progress": False})
    written, before = tree(out / "shards"), digests(out)
    with (out / "shards" / "1.jsonl").open("ab") as handle:
        handle.write(b"\n")  # one byte more: not the output recorded
    rescorer.apply(None, tuned_on_columns, inputs=tmp_path / "in", out_dir=out, engine={"progress": False})
    after = digests(out)
    assert tree(out / "shards") == written and after["1.jsonl"][0] != before["1.jsonl"][0]
    assert {name: after[name] for name in ("0.jsonl", "2.jsonl")} == {name: before[name] for name in ("0.jsonl",
                                                                                                      "2.jsonl")}


def rewritten_in_place(path: Path, rewrite: Callable[[Path], None]) -> None:
    """``path`` rewritten by ``rewrite`` to as many bytes, its modification time put back: only its content tells."""
    info, before = path.stat(), path.read_bytes()
    rewrite(path)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (info.st_size, info.st_mtime_ns) and path.read_bytes() != before


def two_texts_exchanged(path: Path) -> None:
    """A JSONL list rewritten with two equally long texts of one utterance's hypotheses exchanged: its hypotheses in
    another order under the same scores, in as many bytes."""
    nbest = rescorer.read_nbest(path)
    k, i, j = next((k, i, j) for k, u in enumerate(nbest) for i, j in itertools.combinations(range(len(u.hyps)), 2)
                   if len(u.hyps[i].text.encode()) == len(u.hyps[j].text.encode()) and u.hyps[i].text != u.hyps[j].text)
    hyps = list(nbest.utterances[k].hyps)
    hyps[i], hyps[j] = replace(hyps[i], text=hyps[j].text), replace(hyps[j], text=hyps[i].text)
    utterances = list(nbest.utterances)
    utterances[k] = utterances[k].with_hyps(hyps)
    write_nbest(nbest.with_utterances(utterances), path, "jsonl")


def words_reversed_on_the_first_line(path: Path) -> None:
    """An ESPnet ``text`` file whose first hypothesis has its words in reverse order (as many bytes)."""
    first, *rest = path.read_text(encoding="utf-8").splitlines(keepends=True)
    key, text = first.rstrip("\n").split(" ", 1)
    path.write_text("".join([f"{key} {' '.join(reversed(text.split(' ')))}\n", *rest]), encoding="utf-8")


def two_jsonl_shards(demo_shards: Path, folder: Path) -> None:
    nbest = rescorer.read_nbest(demo_shards / "dev.jsonl")
    for k in range(2):
        write_nbest(nbest.with_utterances(nbest.utterances[20 * k : 20 * k + 20]), folder / f"{k}.jsonl")


def applied(tuned: Path, inputs: Path | list[Path], out: Path) -> Report:
    return rescorer.apply(None, tuned, inputs=inputs, out_dir=out, engine={"progress": False}).report


def shard_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("shard ")]


KEPT_ONE = "1 of 2 shards were finished by an earlier run of this job and kept as they are"


def test_an_input_rewritten_in_another_order_with_its_size_and_time_kept_is_done_again_and_the_other_kept(
        demo_shards, tuned_on_columns, tmp_path, caplog):
    two_jsonl_shards(demo_shards, tmp_path / "in")
    out = tmp_path / "out"
    applied(tuned_on_columns, tmp_path / "in", out)
    written, before = tree(out / "shards"), digests(out)
    rewritten_in_place(tmp_path / "in" / "1.jsonl", two_texts_exchanged)
    caplog.set_level("INFO", logger="rescorer")
    caplog.clear()  # only this apply's lines, whatever an earlier test left the logger at
    assert applied(tuned_on_columns, tmp_path / "in", out).notes[0] == KEPT_ONE
    lines = shard_lines(caplog)
    assert lines[0].endswith("(finished before)") and "finished before" not in lines[1]
    assert digests(out)["0.jsonl"] == before["0.jsonl"]
    applied(tuned_on_columns, [tmp_path / "in" / "1.jsonl"], tmp_path / "fresh")
    fresh = (tmp_path / "fresh" / "shards" / "1.jsonl").read_bytes()
    assert (out / "shards" / "1.jsonl").read_bytes() == fresh != written["1.jsonl"]


def test_an_input_touched_but_unchanged_is_kept_and_a_record_without_a_content_digest_is_done_again(
        demo_shards, tuned_on_columns, tmp_path, caplog):
    two_jsonl_shards(demo_shards, tmp_path / "in")
    out = tmp_path / "out"
    applied(tuned_on_columns, tmp_path / "in", out)
    written, before = tree(out / "shards"), digests(out)
    touched = tmp_path / "in" / "0.jsonl"
    os.utime(touched, ns=(touched.stat().st_atime_ns, touched.stat().st_mtime_ns + 10**9))  # a later time, same bytes
    assert applied(tuned_on_columns, tmp_path / "in", out).notes[0] == ("2 of 2 shards were finished by an earlier "
                                                                       "run of this job and kept as they are")
    assert digests(out) == before
    record = out / "done" / "1.jsonl.json"
    older = {k: v for k, v in record_value(record.read_text()).items() if k != "content"}
    record.write_text(record_text({**older, "input": [1, 2]}) + "\n")  # the input by its size and time only
    caplog.set_level("INFO", logger="rescorer")
    caplog.clear()  # only this apply's lines, whatever an earlier test left the logger at
    assert applied(tuned_on_columns, tmp_path / "in", out).notes[0] == KEPT_ONE
    lines = shard_lines(caplog)
    assert lines[0].endswith("(finished before)") and "finished before" not in lines[1]
    assert tree(out / "shards") == written and digests(out)["1.jsonl"][0] != before["1.jsonl"][0]


def test_a_decode_directory_whose_one_rank_file_changed_with_its_size_and_time_kept_is_done_again(
        demo_shards, tuned_on_columns, tmp_path):
    shutil.copytree(demo_shards / "shards", tmp_path / "in")
    out = tmp_path / "out"
    applied(tuned_on_columns, tmp_path / "in", out)
    written, before = tree(out / "shards" / "split1"), digests(out)
    rewritten_in_place(tmp_path / "in" / "split1" / "2best_recog" / "text", words_reversed_on_the_first_line)
    assert applied(tuned_on_columns, tmp_path / "in", out).notes[0] == KEPT_ONE
    assert digests(out)["split0"] == before["split0"]
    applied(tuned_on_columns, [tmp_path / "in" / "split1"], tmp_path / "fresh")
    fresh = tree(tmp_path / "fresh" / "shards" / "split1")
    assert tree(out / "shards" / "split1") == fresh != written


def test_splits_of_one_file_name_are_each_written_under_a_name_of_their_folder(demo_shards, tuned_on_columns,
                                                                              tmp_path):
    nbest = rescorer.read_nbest(demo_shards / "dev.jsonl")
    splits = [tmp_path / "exp" / "decode" / f"split{k}" / "nbest.jsonl" for k in (1, 2)]
    for k, path in enumerate(splits):
        write_nbest(nbest.with_utterances(nbest.utterances[20 * k : 20 * k + 20]), path)
    report = rescorer.apply(None, tuned_on_columns, inputs=str(tmp_path / "exp" / "decode" / "split*" / "nbest.jsonl"),
                            out_dir=tmp_path / "all", engine={"progress": False}).report
    names = ["split1-nbest.jsonl", "split2-nbest.jsonl"]
    assert sorted(os.listdir(tmp_path / "all" / "shards")) == names and list(report.sets) == names
    assert sorted(os.listdir(tmp_path / "all" / "done")) == [f"{name}.json" for name in names]
    for name, path in zip(names, splits):
        rescorer.apply(None, tuned_on_columns, inputs=[path], out_dir=tmp_path / name, engine={"progress": False})
        assert (tmp_path / "all" / "shards" / name).read_bytes() == (tmp_path / name / "shards" / "nbest.jsonl"
                                                                     ).read_bytes()
        assert report.sets[name].utterances == 20


@pytest.mark.slow
def test_the_command_line_applies_an_at_list_and_refuses_a_misspelt_one_in_a_line(demo_shards, tuned_on_columns,
                                                                                    tmp_path):
    split0, split1 = (os.path.relpath(demo_shards / "shards" / name, tmp_path) for name in ("split0", "split1"))
    (tmp_path / "shards.txt").write_text(f"# the demo's splits, relative to this file\n{split0}\n\n{split1}\n")
    (tmp_path / "misspelt.txt").write_text(f"{split0}\n# then\nsplit9\n")
    command = [sys.executable, "-m", "rescorer", "task=apply", f"task.tuned={tuned_on_columns}", "engine.store=null"]
    env = {**os.environ, "CI": "1"}
    done = subprocess.run([*command, f"task.inputs=@{tmp_path / 'shards.txt'}", f"out_dir={tmp_path / 'out'}"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(tmp_path / "out" / "shards")) == ["split0", "split1"]
    done = subprocess.run([*command, f"task.inputs=@{tmp_path / 'misspelt.txt'}", f"out_dir={tmp_path / 'bad'}"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 2 and "Traceback" not in done.stdout + done.stderr
    assert done.stderr.splitlines() == [f"rescorer: error: {tmp_path / 'misspelt.txt'}:3: no such file or directory: "
                                        f"{tmp_path / 'split9'} (a list file names one path a line, relative to its "
                                        "folder)"]
    assert not (tmp_path / "bad").exists()


def test_an_out_dir_of_another_job_or_inside_the_inputs_is_refused(demo_shards, tuned, tmp_path):
    shard = shutil.copy(demo_shards / "dev.jsonl", tmp_path / "one.jsonl")
    rescorer.apply(None, tuned, inputs=[shard], out_dir=tmp_path / "out", engine={"progress": False})
    other = tmp_path / "other.yaml"
    text = tuned.read_text()
    other.write_text(text.replace("weight: ", "weight: 0.5 #", 1))
    with pytest.raises(ConfigError, match="holds shards re-ranked by another tuned rescorer"):
        rescorer.apply(None, other, inputs=[shard], out_dir=tmp_path / "out", engine={"progress": False})
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(ConfigError, match="is not empty and holds no job.json"):
        rescorer.apply(None, tuned, inputs=[shard], out_dir=tmp_path / "mine", engine={"progress": False})
    with pytest.raises(ConfigError, match="are the same file"):
        rescorer.apply(None, tuned, inputs=[shard, demo_shards / "dev.jsonl", tmp_path / "one.jsonl"],
                       out_dir=tmp_path / "new", engine={"progress": False})
    with pytest.raises(ConfigError, match="which this run reads"):
        rescorer.apply(None, tuned, inputs=[tmp_path], out_dir=tmp_path / "mine" / "out", engine={"progress": False})
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me" and not (tmp_path / "new").exists()


def test_an_out_dir_inside_a_folder_of_shards_is_refused_on_the_first_run(demo_shards, tuned, tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    shutil.copy(demo_shards / "dev.jsonl", folder / "one.jsonl")
    before = tree(folder)
    with pytest.raises(ConfigError, match=f"out_dir={folder / 'out'} is inside {folder}, which this run reads"):
        rescorer.apply(None, tuned, inputs=folder, out_dir=folder / "out", engine={"progress": False})
    assert tree(folder) == before


@pytest.mark.slow
def test_the_command_line_applies_a_glob_of_shards_and_refuses_an_empty_one_in_a_line(demo_shards, tuned,
                                                                                        tmp_path):
    command = [sys.executable, "-m", "rescorer.cli", "task=apply", f"task.tuned={tuned}", "engine.store=null"]
    env = {**os.environ, "CI": "1"}
    done = subprocess.run([*command, f"task.inputs={demo_shards}/shards/split*", f"out_dir={tmp_path / 'out'}"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert "shard 2/2 split1: 20 utterances" in done.stdout + done.stderr
    assert sorted(os.listdir(tmp_path / "out" / "shards")) == ["split0", "split1"]
    done = subprocess.run([*command, f"task.inputs={tmp_path}/none*", f"out_dir={tmp_path / 'empty'}"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "matches no file" in done.stderr, done.stderr
    assert not (tmp_path / "empty").exists()


@pytest.mark.xdist_group("ray")  # Ray is one per machine: its tests run one after another
@pytest.mark.slow
def test_a_sharded_apply_on_a_three_process_ray_cluster_ranks_as_the_local_engine(demo_shards, tuned, ray_cluster,
                                                                                  tmp_path):
    command = [sys.executable, "-m", "rescorer.cli", "task=apply", f"task.tuned={tuned}", "engine.store=null",
               f"task.inputs={demo_shards / 'shards'}"]
    env = {**os.environ, "CI": "1", **RAY_ENV}
    ray = ["engine=ray", f"engine.scale.address={ray_cluster}", "engine.scale.workers=2", "engine.scale.block=16"]
    for out, engine in (("local", []), ("ray", ray)):
        done = subprocess.run([*command, f"out_dir={tmp_path / out}", *engine], capture_output=True, text=True,
                              timeout=600, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
    assert (done.stdout + done.stderr).count("starting 2 Ray actor(s) for ll") == 1  # one pool for every shard
    for name in ("split0", "split1"):
        local, ray_ = (rescorer.read_nbest(tmp_path / out / "shards" / name) for out in ("local", "ray"))
        assert [[h.text for h in u.hyps] for u in ray_] == [[h.text for h in u.hyps] for u in local]
        np.testing.assert_allclose(ray_.column_array("rescore"), local.column_array("rescore"), atol=1e-4)


TERMINATED_AFTER_ONE_SHARD = """
import os, signal, sys
from rescorer.cli import main
from rescorer.pipeline import shards

done = shards.Shards.done

def done_then_terminate(place, *args):
    done(place, *args)
    os.kill(os.getpid(), signal.SIGTERM)  # as a scheduler's timeout does, with the Ray actors at work

shards.Shards.done = done_then_terminate
sys.argv = ["rescorer", *sys.argv[1:]]
main()
"""


@pytest.mark.xdist_group("ray")  # Ray is one per machine: its tests run one after another
@pytest.mark.slow
def test_a_sigterm_during_a_ray_apply_is_one_line_and_the_rerun_resumes(demo_shards, tuned, ray_cluster, tmp_path):
    arguments = ["task=apply", f"task.tuned={tuned}", "engine.store=null", f"task.inputs={demo_shards / 'shards'}",
                 f"out_dir={tmp_path / 'out'}", "engine=ray", f"engine.scale.address={ray_cluster}",
                 "engine.scale.workers=2"]
    env = {**os.environ, "CI": "1", **RAY_ENV}
    done = subprocess.run([sys.executable, "-c", TERMINATED_AFTER_ONE_SHARD, *arguments], capture_output=True,
                          text=True, timeout=600, env=env)
    assert done.returncode == 143, done.stderr[-3000:]
    assert done.stderr.strip().splitlines() == ["rescorer: interrupted: rerun the same command to resume"]
    assert len(list((tmp_path / "out" / "done").iterdir())) == 1
    again = subprocess.run([sys.executable, "-m", "rescorer.cli", *arguments], capture_output=True, text=True,
                           timeout=600, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    lines = [line for line in again.stdout.splitlines() if line.startswith("shard ")]
    assert lines[0].startswith("shard 1/2 split0: 20 utterances") and lines[0].endswith("(finished before)")
    assert lines[1].startswith("shard 2/2 split1: 20 utterances") and "finished before" not in lines[1]


def test_shards_of_another_depth_than_the_tuning_lists_are_named_once_in_a_warning(demo_shards, tuned, tmp_path,
                                                                                  caplog):
    nbest = rescorer.read_nbest(demo_shards / "dev.jsonl")
    assert nbest.depth == 5
    for name, depth in (("a.jsonl", 3), ("b.jsonl", 5), ("c.jsonl", 3)):
        write_nbest(nbest.with_utterances([u.with_hyps(u.hyps[:depth]) for u in nbest][:4]), tmp_path / "in" / name)
    report = rescorer.apply(None, tuned, inputs=tmp_path / "in", out_dir=tmp_path / "out",
                            engine={"progress": False}).report
    assert report.warnings == ["2 shards (a.jsonl, c.jsonl): 3-best lists, but the weights were tuned on 5-best "
                               "lists (dev): weights may not carry over to another depth (cut the lists with top=5, "
                               "or re-tune on lists like these)"]
    said = [r.getMessage() for r in caplog.records if "3-best lists" in r.getMessage()]
    assert sum("shard a.jsonl: 3-best" in line for line in said) == 1  # said once while running, for the first one
    assert not any("shard c.jsonl" in line for line in said)


def test_the_terminal_shows_the_first_shards_and_how_many_more_the_report_has(demo_shards, tuned, tmp_path, caplog):
    nbest = rescorer.read_nbest(demo_shards / "dev.jsonl")
    for k in range(22):
        write_nbest(nbest.with_utterances(nbest.utterances[k : k + 1]), tmp_path / "in" / f"{k:02d}.jsonl")
    caplog.set_level("INFO")
    rescorer.apply(None, tuned, inputs=tmp_path / "in", out_dir=tmp_path / "out", engine={"progress": False})
    table = next(r.getMessage() for r in caplog.records if "shards re-ranked with" in r.getMessage())
    assert "19.jsonl" in table and "20.jsonl" not in table and "… 2 more in report.md" in table
    rows = [line for line in (tmp_path / "out" / "report.md").read_text().splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + 22 and rows[-1].startswith("| 21.jsonl |")  # the header and every shard


def test_each_shards_line_tells_the_time_left_from_the_progress_meter_and_a_finished_shard_takes_none(
        demo_shards, tuned, tmp_path, caplog, monkeypatch):
    """The progress module's clock, moved a minute per shard re-ranked: the shard done before counts as done and
    costs no time, so after one minute for split1 the rest (dev.jsonl) takes a minute per split1's bytes."""
    from rescorer.engine import progress
    from rescorer.pipeline import applying, shards

    split0, split1, dev = (demo_shards / "shards" / "split0", demo_shards / "shards" / "split1",
                           demo_shards / "dev.jsonl")
    rescorer.apply(None, tuned, inputs=[split0], out_dir=tmp_path / "out", engine={"progress": False})
    now = [0.0]
    rerank = applying.apply_input

    def a_minute_each(*args, **kwargs):
        now[0] += 60.0
        return rerank(*args, **kwargs)

    monkeypatch.setattr(progress, "CLOCK", lambda: now[0])
    monkeypatch.setattr(applying, "apply_input", a_minute_each)
    caplog.set_level("INFO", logger="rescorer")
    caplog.clear()  # only this apply's lines, whatever an earlier test left the logger at
    rescorer.apply(None, tuned, inputs=[split0, split1, dev], out_dir=tmp_path / "out", engine={"progress": False})
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("shard ")]
    left = progress.duration(60.0 * shards.input_bytes(dev) / shards.input_bytes(split1))
    assert [line.split(":")[0] for line in lines] == ["shard 1/3 split0", "shard 2/3 split1", "shard 3/3 dev.jsonl"]
    assert lines[0].endswith("(finished before)")
    assert lines[1].endswith(f"1-bests changed; about {left} left") and left != "0 s"
    assert "left" not in lines[2]


def test_an_apply_asked_for_progress_prints_nothing_under_logging_disable(demo_shards, tuned, tmp_path, capfd):
    import logging

    capfd.readouterr()
    logging.disable(logging.CRITICAL)
    try:
        sharded = rescorer.apply(None, tuned, inputs=demo_shards / "shards", out_dir=tmp_path / "sharded",
                                 engine={"progress": True, "store": None})
        whole = rescorer.apply({"dev": str(demo_shards / "dev.jsonl")}, tuned,
                               engine={"progress": True, "store": None}, bootstrap=10)
    finally:
        logging.disable(logging.NOTSET)
    assert [s.utterances for s in sharded.report.sets.values()] == [20, 20]
    assert whole.report.sets["dev"].utterances == 40
    assert capfd.readouterr() == ("", "")


def test_a_closed_standard_output_ends_the_apply_quietly_and_the_rerun_completes(demo_shards, tuned, tmp_path):
    arguments = [sys.executable, "-m", "rescorer.cli", "task=apply", f"task.tuned={tuned}", "engine.store=null",
                 f"task.inputs={demo_shards / 'shards'}", f"out_dir={tmp_path / 'out'}", "engine.progress=false"]
    read, write = os.pipe()
    os.close(read)  # the reader has gone before the first line (as `| head -0` would): every write fails
    try:
        done = subprocess.run(arguments, stdout=write, stderr=subprocess.PIPE, text=True, timeout=600)
    finally:
        os.close(write)
    assert done.returncode == 141 and done.stderr == "", done.stderr[-3000:]
    assert len(list((tmp_path / "out" / "done").iterdir())) == 1  # the shard finished before its line is kept
    again = subprocess.run(arguments, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    lines = [line for line in again.stdout.splitlines() if line.startswith("shard ")]
    assert lines[0].endswith("(finished before)") and "finished before" not in lines[1]
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    assert report["data"] == str(demo_shards / "shards")  # named after the inputs, not a data group


def test_a_rerun_on_fewer_inputs_reports_only_its_own_and_names_the_outputs_it_did_not_make(demo_shards, tuned,
                                                                                             tmp_path):
    split0, split1 = demo_shards / "shards" / "split0", demo_shards / "shards" / "split1"
    rescorer.apply(None, tuned, inputs=[split0, split1], out_dir=tmp_path / "out", engine={"progress": False})
    before = digests(tmp_path / "out")["split1"]
    report = rescorer.apply(None, tuned, inputs=[split0], out_dir=tmp_path / "out", engine={"progress": False}).report
    assert list(report.sets) == ["split0"]
    assert [n for n in report.notes if "split1" in n] == [
        "1 output(s) in shards/ (split1) come from an earlier run of this job on other inputs and are not in this "
        "report: remove them, or use a new out_dir"]
    assert digests(tmp_path / "out")["split1"] == before  # kept: a rerun of a part loses nothing
    assert "split1" in (tmp_path / "out" / "report.md").read_text()


def test_an_out_dir_a_glob_of_the_inputs_would_match_is_refused_on_the_first_run(demo_shards, tuned, tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    shutil.copy(demo_shards / "dev.jsonl", folder / "one.jsonl")
    before = tree(folder)
    for out in (folder / "out", folder / "out" / "deeper"):  # the glob matches it, or the folder holding it
        with pytest.raises(ConfigError, match="which this run reads, matches: the next run would read the outputs"):
            rescorer.apply(None, tuned, inputs=f"{folder}/*", out_dir=out, engine={"progress": False})
    assert tree(folder) == before
    report = rescorer.apply(None, tuned, inputs=f"{folder}/*.jsonl", out_dir=folder / "out",
                            engine={"progress": False}).report  # outputs the glob cannot reach
    assert list(report.sets) == ["one.jsonl"]
