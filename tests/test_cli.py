"""The command line: Hydra configs compose and instantiate, and the evaluate task runs end to end."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jiwer
import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

import rescorer
from rescorer.cli import CONF, register_resolvers

from .conftest import DEMO, ROOT, SHARED

RESCORER = [sys.executable, "-m", "rescorer.cli"]
DATA_CONFIGS = sorted(p.stem for p in (CONF / "data").glob("*.yaml"))
TASK_CONFIGS = sorted(p.stem for p in (CONF / "task").glob("*.yaml"))


def run_cli(*overrides: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run([*RESCORER, *overrides], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def compose_config(*overrides: str):
    register_resolvers()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


@pytest.mark.parametrize("data", DATA_CONFIGS)
def test_every_data_config_composes_and_instantiates(data):
    cfg = compose_config(f"data={data}")
    if not str(cfg.data.sets[next(iter(cfg.data.sets))].nbest).startswith(str(ROOT / "recipes")) and not SHARED.exists():
        pytest.skip("real data not available: ../shared")
    corpus = instantiate(cfg.data, _convert_="all")
    assert corpus.name == data
    assert corpus.metric_name in ("wer", "bleu")


@pytest.mark.parametrize("task", TASK_CONFIGS)
def test_every_task_config_composes(task):
    cfg = compose_config(f"task={task}")
    assert cfg.task.name == task
    assert cfg.task._target_ == f"rescorer.tasks.{task}.run"


def test_evaluate_demo_end_to_end(tmp_path):
    result = run_cli("task=evaluate", "data=demo", f"out_dir={tmp_path}/out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "dev_other" in result.stdout and "oracle" in result.stdout
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert (tmp_path / "out" / "report.md").exists()
    assert sorted(os.listdir(tmp_path)) == ["out"]  # no stray Hydra output directories
    for name in ("dev_other", "test_clean"):
        nbest = rescorer.read_nbest(DEMO / name, refs=DEMO / name / "ref.trn")
        entry = report["sets"][name]
        assert entry["utterances"] == 200 and entry["hypotheses"] == 6000
        baseline = 100 * jiwer.wer(nbest.refs(), [u.hyps[0].text for u in nbest])
        assert entry["baseline"]["wer"] == pytest.approx(baseline, abs=1e-9)
        assert entry["oracle"]["wer"] < entry["baseline"]["wer"]
    assert report["metric"] == "wer" and report["signature"].startswith("rescorer:")


def test_multirun_sweeps_data_sets(tmp_path):
    result = run_cli("-m", "task=evaluate", "data=demo", "data.metric.transform=default,standardize",
                     f"out_dir={tmp_path}/out/${{data.metric.transform}}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for transform in ("default", "standardize"):
        report = json.loads((tmp_path / "out" / transform / "report.json").read_text())
        assert transform in report["signature"]


def test_unknown_override_is_a_clear_error(tmp_path):
    result = run_cli("data=nonexistent", cwd=tmp_path)
    assert result.returncode != 0
    assert "nonexistent" in result.stderr
