"""Every input is checked once, where it comes in: the search spec, the run options and ``out_dir`` each by one
function, called once per run whether the run starts at the command line or in Python."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

import rescorer
from rescorer.combine import rules
from rescorer.options import RunOptions
from rescorer.paths import CONF, DEMO
from rescorer.io import write_nbest
from rescorer import outdir
from rescorer.tuned.bundle import bundle
from rescorer.studies import distill  # noqa: F401  (imported, so its out_dir is counted too)
from rescorer.tasks import register_resolvers, run_task

EXCERPT = {"every": 15, "top": 5}
CTC = {"ctc": {"range": [0, 1], "step": 0.5}}


@pytest.fixture
def checks(monkeypatch) -> dict[str, int]:
    """How often each checker ran: the search rule's options, the run options and ``out_dir`` (opened by one
    function for every task, counted wherever it is imported)."""
    calls = {"search": 0, "run": 0, "out_dir": 0}

    def counted(name, function):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return function(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(rules, "search_options", counted("search", rules.search_options))
    original = outdir.open_out_dir
    for module in [m for name, m in sys.modules.items() if name.startswith("rescorer.")]:  # wherever it is imported
        if getattr(module, "open_out_dir", None) is original:
            monkeypatch.setattr(module, "open_out_dir", counted("out_dir", original))
    monkeypatch.setattr(RunOptions, "of", classmethod(counted("run", RunOptions.of.__func__)))
    return calls


def demo_set(name: str) -> dict:
    return {"nbest": str(DEMO / name), "refs": str(DEMO / name / "ref.trn"), **EXCERPT}


def test_the_python_api_checks_each_spec_once(checks, tmp_path):
    result = rescorer.rescore(sets={"dev_other": demo_set("dev_other")}, columns=CTC, search={"name": "fast"},
                              bootstrap=50, out_dir=tmp_path / "tuned")
    assert checks == {"search": 1, "run": 1, "out_dir": 1}
    rescorer.apply({"nbest": str(DEMO / "test_clean"), **EXCERPT}, tmp_path / "tuned" / "tuned.yaml",
                   out_dir=tmp_path / "applied", bootstrap=50)
    assert checks == {"search": 1, "run": 2, "out_dir": 2}  # apply has no search
    assert result.weights


def test_the_command_line_checks_each_spec_once(checks, tmp_path):
    register_resolvers()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(config_name="config", overrides=[
            "task=rescore", "data=demo", "scorer=[]", "++data.sets.dev_other.every=15",
            "++data.sets.test_clean.every=15", "task.bootstrap=50", "engine.progress=false",
            "task.columns={ctc: {range: [0, 1], step: 0.5}}", f"out_dir={tmp_path / 'out'}"])
    report = run_task(cfg)
    assert checks == {"search": 1, "run": 1, "out_dir": 1}
    assert Path(report["tuned_file"]).is_file()


def test_a_sharded_apply_and_a_bundle_open_out_dir_once(checks, tmp_path):
    rescorer.rescore(sets={"dev_other": demo_set("dev_other")}, columns=CTC, bootstrap=10, out_dir=tmp_path / "tuned")
    nbest = rescorer.read_nbest(DEMO / "test_clean")
    write_nbest(nbest.with_utterances(list(nbest)[:10]), tmp_path / "shard.jsonl", "jsonl")
    tuned = tmp_path / "tuned" / "tuned.yaml"
    rescorer.apply(None, tuned, inputs=tmp_path / "shard.jsonl", out_dir=tmp_path / "job", engine={"progress": False})
    assert checks["out_dir"] == 2
    bundle(tuned, tmp_path / "bundle")
    assert checks["out_dir"] == 3
    assert (tmp_path / "job" / "shards" / "shard.jsonl").is_file() and (tmp_path / "bundle" / "tuned.yaml").is_file()
