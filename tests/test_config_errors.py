"""A misspelt config group, option or key on the command line: one stderr line naming it, the closest valid name and
the choices, exit status 2, no traceback, nothing written; valid overrides still run."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rescorer.paths import CONF

from .conftest import ROOT

SCORERS = sorted(p.stem for p in (CONF / "scorer").glob("*.yaml"))

MISSPELT = [  # (overrides, the words the error line must hold)
    pytest.param(["scorers=[student]"], ["'scorers'", "'scorer'"], id="top-level key"),
    pytest.param(["+scorers=[student]"], ["'scorers'", "'scorer'"], id="appended top-level key"),
    pytest.param(["+outdir=x"], ["'outdir'", "'out_dir'"], id="appended out_dir"),
    pytest.param(["search=gird"], ["'gird'", "'grid'", "fast, grid, robust"], id="search option"),
    pytest.param(["scorer=[bert]"], ["'bert'", ", ".join(SCORERS)], id="scorer option"),
    pytest.param(["data=demoo"], ["'demoo'", "'demo'"], id="data option"),
    pytest.param(["engine=rayy"], ["'rayy'", "'ray'"], id="engine option"),
    pytest.param(["task=rescor"], ["'rescor'", "'rescore'"], id="task option"),
    pytest.param(["+experiment=demoo"], ["'demoo'", "'demo'"], id="experiment"),
    pytest.param(["engine.thread=1"], ["'thread'", "'threads'"], id="engine key"),
    pytest.param(["++engine.bugdet=5"], ["'bugdet'", "'budget'"], id="force-added engine key"),
    pytest.param(["task=rescore", "task.tune_onn=dev"], ["'tune_onn'", "'tune_on'"], id="task key"),
    pytest.param(["task=rescore", "+task.colums={ctc: {}}"], ["'colums'", "'columns'"], id="appended task key"),
    pytest.param(["scorer=[student]", "scorer.student.apend_period=false"], ["'apend_period'", "'append_period'"],
                 id="scorer key"),
    pytest.param(["scorer=[student]", "+scorer.student.apend_period=false"], ["'apend_period'", "'append_period'"],
                 id="appended scorer key"),
    pytest.param(["+data.rot=x"], ["'rot'", "'root'"], id="appended data key"),
    pytest.param(["+model.mine.path=x"], ["'mine'", "causal, masked, student"], id="appended model key"),
    pytest.param(["scorer=[ll]", "scorer.ll.window=256"], ["scorer.ll.window", "+scorer.ll.window=256"],
                 id="a key that needs +"),
    pytest.param(["experiment=demo"], ["+experiment=demo"], id="a group that needs +"),
    pytest.param(["task=apply", "tuned=/tmp/x.yaml"], ["unknown key 'tuned': did you mean task.tuned?",
                                                       "(task.tuned=/tmp/x.yaml)"], id="a task key at the top"),
    pytest.param(["device=cuda"], ["did you mean engine.device?", "(engine.device=cuda)"], id="an engine key at the top"),
    pytest.param(["--config-dir", str(ROOT / "recipes" / "moses_europarl" / "conf"), "data=convertd"],
                 ["'convertd'", "'converted'"], id="option of a --config-dir group"),
]


def rescorer_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": path}
    return subprocess.run([sys.executable, "-m", "rescorer.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("overrides, expected", MISSPELT)
def test_a_misspelt_group_option_or_key_is_one_line_with_the_closest_name(overrides, expected, tmp_path):
    result = rescorer_cli(*overrides, f"out_dir={tmp_path}/out", cwd=tmp_path)  # task=evaluate by default
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("rescorer: error: "), result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert all(word in lines[0] for word in expected), lines[0]
    assert not (tmp_path / "out").exists()


WRONG_TRAINING = [  # (overrides, the words the error line must hold): refused before any text is read or scored
    pytest.param(["task=distill", "task.max_seconds=.inf"],
                 ["task.max_seconds must be a number of seconds (inf: no limit) > 0, not '.inf'"], id="distill limit"),
    pytest.param(["task=distill", "task.epochs=0"], ["task.epochs must be an integer ≥ 1, not 0"],
                 id="distill epochs"),
    pytest.param(["task=adapt", "task.lr=-1"], ["task.lr must be a number > 0, not -1"], id="adapt rate"),
    pytest.param(["task=pcfg", "task.masked.batch_size=many"], ["task.masked.batch_size must be an integer ≥ 1"],
                 id="pcfg batch"),
]


@pytest.mark.parametrize("overrides, expected", WRONG_TRAINING)
def test_a_training_option_of_the_wrong_kind_is_one_line_before_any_work(overrides, expected, tmp_path):
    result = rescorer_cli(*overrides, f"out_dir={tmp_path}/out", cwd=tmp_path)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("rescorer: error: ") and all(word in lines[0] for word in expected), lines[0]
    assert not (tmp_path / "out").exists()


def test_valid_overrides_still_run(tmp_path):
    """Appended data sets and keys, a scorer list, a Hydra key, and a data option of the user's own --config-dir."""
    own = tmp_path / "conf" / "data"
    own.mkdir(parents=True)
    (own / "mine.yaml").write_text((CONF / "data" / "demo.yaml").read_text().replace("name: demo", "name: mine"))
    result = rescorer_cli("--config-dir", str(tmp_path / "conf"), "task=evaluate", "data=mine", "scorer=[student,ll]",
                          "hydra.run.dir=.", "+data.sets.extra.nbest=${data.sets.test_clean.nbest}",
                          "+data.sets.extra.refs=${data.sets.test_clean.refs}", "++data.sets.dev_other.every=3",
                          "engine.threads=1", f"out_dir={tmp_path}/out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert set(report["sets"]) == {"dev_other", "test_clean", "extra"}
    assert report["sets"]["dev_other"]["utterances"] == 100


def test_a_config_dir_holding_a_pipe_is_refused_before_hydra_would_wait_on_it(tmp_path):
    (tmp_path / "conf" / "data").mkdir(parents=True)
    os.mkfifo(tmp_path / "conf" / "data" / "mine.yaml")
    result = rescorer_cli("--config-dir", str(tmp_path / "conf"), "data=mine", f"out_dir={tmp_path}/out", cwd=tmp_path)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0] == (f"rescorer: error: --config-dir {tmp_path / 'conf'}: {tmp_path / 'conf' / 'data' / 'mine.yaml'} "
                        "is not a regular file but a pipe, which could wait for a writer forever: save it to a file first")


def test_a_config_dir_yaml_with_aliases_is_refused_before_it_expands(tmp_path):
    (tmp_path / "conf" / "data").mkdir(parents=True)
    laughs = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    laughs += [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]" for i in range(8)]
    (tmp_path / "conf" / "data" / "mine.yaml").write_text("\n".join(laughs) + "\n")
    result = rescorer_cli("--config-dir", str(tmp_path / "conf"), "data=mine", f"out_dir={tmp_path}/out", cwd=tmp_path)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0] == f"rescorer: error: {tmp_path / 'conf' / 'data' / 'mine.yaml'}: YAML aliases (*name) are not " \
                       "allowed in a config"
