"""One rule for every task's out_dir: a run replaces only a new, empty or earlier run's out_dir, a sharded apply
resumes only its own job's and a distillation only an earlier distillation's; anything else is refused in one line
and left as it was."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import rescorer
from rescorer.errors import ConfigError
from rescorer.io import write_nbest
from rescorer.tuned.bundle import bundle
from rescorer.studies.distill import distill_student

from .conftest import DEMO

EXCERPT = {"every": 15, "top": 5}
CTC = {"ctc": {"range": [0, 1], "step": 0.5}}
HOLDS_A_JOB = r"holds a sharded apply's shards \(job\.json\): choose a new out_dir"


def demo_set(name: str) -> dict:
    return {"nbest": str(DEMO / name), "refs": str(DEMO / name / "ref.trn"), **EXCERPT}


def snapshot(path: Path) -> dict[str, bytes | None]:
    """Everything under ``path`` by relative name: a file's bytes, None for a folder."""
    return {str(p.relative_to(path)): p.read_bytes() if p.is_file() else None for p in sorted(path.rglob("*"))}


@pytest.fixture(scope="module")
def tuned(tmp_path_factory) -> Path:
    """A tuned.yaml on the demo's CTC column (no LM), in the out_dir of the rescore run that wrote it."""
    out = tmp_path_factory.mktemp("tuned") / "run"
    rescorer.rescore(sets={"dev_other": demo_set("dev_other")}, columns=CTC, bootstrap=10, out_dir=out)
    return out / "tuned.yaml"


@pytest.fixture(scope="module")
def shard(tmp_path_factory) -> Path:
    nbest = rescorer.read_nbest(DEMO / "test_clean")
    path = tmp_path_factory.mktemp("shard") / "part.jsonl"
    write_nbest(nbest.with_utterances(list(nbest)[:10]), path, "jsonl")
    return path


@pytest.fixture
def job(tuned, shard, tmp_path) -> Path:
    """A sharded apply's finished out_dir (job.json, shards/, done/ and its report)."""
    rescorer.apply(None, tuned, inputs=shard, out_dir=tmp_path / "job", engine={"progress": False})
    assert {"job.json", "shards", "done", "report.json"} <= set(os.listdir(tmp_path / "job"))
    return tmp_path / "job"


def test_a_rescore_run_refuses_a_sharded_jobs_out_dir(job):
    before = snapshot(job)
    with pytest.raises(ConfigError, match=f"out_dir={job} {HOLDS_A_JOB}; a run replaces only an earlier run's"):
        rescorer.rescore(sets={"dev_other": demo_set("dev_other")}, columns=CTC, bootstrap=10, out_dir=job)
    assert snapshot(job) == before


def test_an_in_memory_apply_refuses_a_sharded_jobs_out_dir(job, tuned):
    before = snapshot(job)
    with pytest.raises(ConfigError, match=HOLDS_A_JOB):
        rescorer.apply(demo_set("test_clean"), tuned, out_dir=job, bootstrap=10)
    assert snapshot(job) == before


def test_a_bundle_refuses_a_sharded_jobs_out_dir(job, tuned):
    before = snapshot(job)
    with pytest.raises(ConfigError, match=HOLDS_A_JOB):
        bundle(tuned, job)
    assert snapshot(job) == before


@pytest.mark.parametrize("task", [["task=bundle", "task.tuned={tuned}"],
                                  ["task=apply", "task.tuned={tuned}", "data=demo", "++data.sets.test_clean.every=15"],
                                  ["task=evaluate", "data=demo"]])
def test_the_command_line_refuses_a_sharded_jobs_out_dir_in_one_line(job, tuned, task):
    before = snapshot(job)
    done = subprocess.run([sys.executable, "-m", "rescorer", *(a.format(tuned=tuned) for a in task),
                           "engine.store=null", f"out_dir={job}"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "CI": "1"})
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"rescorer: error: out_dir={job} holds a sharded apply's shards (job.json): "
                                        "choose a new out_dir; a run replaces only an earlier run's outputs"]
    assert snapshot(job) == before


def test_a_sharded_apply_refuses_a_rescore_runs_out_dir(tuned, shard, tmp_path):
    run = tmp_path / "run"
    rescorer.rescore(sets={"dev_other": demo_set("dev_other")}, columns=CTC, bootstrap=10, out_dir=run)
    before = snapshot(run)
    with pytest.raises(ConfigError, match=rf"out_dir={run} holds an earlier run's outputs \(report\.json\): choose a "
                                          "new out_dir; a sharded apply resumes only its own job"):
        rescorer.apply(None, tuned, inputs=shard, out_dir=run, engine={"progress": False})
    assert snapshot(run) == before


def test_the_same_sharded_job_resumes_its_out_dir_and_keeps_its_shards(job, tuned, shard):
    shards = snapshot(job / "shards")
    again = rescorer.apply(None, tuned, inputs=shard, out_dir=job, engine={"progress": False})
    assert again.report.notes[0] == "1 of 1 shards were finished by an earlier run of this job and kept as they are"
    assert snapshot(job / "shards") == shards


def test_a_rescore_run_replaces_an_earlier_runs_out_dir_whole(tuned, tmp_path):
    out = tmp_path / "run"
    rescorer.rescore(sets={"dev_other": demo_set("dev_other")}, columns=CTC, bootstrap=10, out_dir=out)
    (out / "stale.txt").write_text("from before")
    rescorer.apply(demo_set("test_clean"), tuned, out_dir=out, bootstrap=10)
    assert not (out / "stale.txt").exists() and (out / "test" / "1best.txt").is_file()


def test_a_distillation_and_a_run_refuse_each_others_out_dir(job, tmp_path):
    task = {"teacher": {"kind": "pll", "model": None}, "init": None, "texts": [], "hypotheses": {}, "lists": {}}
    before = snapshot(job)
    with pytest.raises(ConfigError, match=f"{HOLDS_A_JOB}; a training resumes only an earlier training"):
        distill_student(task, job, {"progress": False}, "demo", {})
    assert snapshot(job) == before
    trained = tmp_path / "student"
    trained.mkdir()
    for name in ("config.json", "report.json"):
        (trained / name).write_text("{}\n")
    with pytest.raises(ConfigError, match=r"holds a training run \(config\.json\): choose a new out_dir; a run "):
        rescorer.rescore(sets={"dev_other": demo_set("dev_other")}, columns=CTC, bootstrap=10, out_dir=trained)
    assert sorted(os.listdir(trained)) == ["config.json", "report.json"]
