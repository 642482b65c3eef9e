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
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import OmegaConf

import rescorer
from rescorer.errors import ConfigError
from rescorer.paths import data_root
from rescorer.tasks import CONF, register_resolvers, scorers_of

from .conftest import DEMO, ROOT, SHARED, need

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


def data_path_keys(node, key: str = ""):
    """Keys (``a.b[0]``) of the unresolved config strings that name ``${paths.data}``."""
    if isinstance(node, dict):
        for name, value in node.items():
            yield from data_path_keys(value, f"{key}.{name}" if key else str(name))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from data_path_keys(value, f"{key}[{i}]")
    elif isinstance(node, str) and "${paths.data}" in node:
        yield key


def test_rescorer_data_moves_every_data_path(monkeypatch, tmp_path):
    monkeypatch.setenv("RESCORER_DATA", str(tmp_path))
    overrides = [f"{group}={p.stem}" for group in ("data", "task", "pairs") for p in sorted((CONF / group).glob("*.yaml"))]
    overrides += [f"scorer=[{p.stem}]" for p in sorted((CONF / "scorer").glob("*.yaml"))]
    resolved = {}
    for override in overrides:
        cfg = compose_config(override)
        for key in data_path_keys(OmegaConf.to_container(cfg, resolve=False)):
            resolved[f"{override}: {key}"] = str(OmegaConf.select(cfg, key))
    assert {"data=librispeech: data.root", "data=moses: data.root", "pairs=blimp: pairs.path",
            "pairs=eventsadapt: pairs.path", "scorer=[pcfg]: scorer.pcfg.model", "task=adapt: task.train[0]",
            "task=adapt: task.dev_refs", "task=distill: task.texts[0]", "task=pcfg: task.grammar"} <= set(resolved)
    assert {key: value for key, value in resolved.items() if not value.startswith(f"{tmp_path}/")} == {}
    assert compose_config("data=librispeech").data.sets.dev_other.nbest.startswith(f"{tmp_path}/")
    assert data_root() == tmp_path


def test_data_root_defaults_to_shared_data_beside_the_repository(monkeypatch):
    monkeypatch.delenv("RESCORER_DATA", raising=False)
    assert Path(compose_config().paths.data).resolve() == data_root().resolve() == (ROOT / ".." / "shared" / "data").resolve()


def test_only_the_paths_config_names_the_data_root():
    named = [str(p.relative_to(CONF)) for p in CONF.rglob("*.yaml")
             if any("shared/data" in line.split("#")[0] for line in p.read_text().splitlines())]
    assert named == ["paths/default.yaml"]


@pytest.mark.parametrize("data", DATA_CONFIGS)
def test_every_data_config_composes_and_instantiates(data):
    cfg = compose_config(f"data={data}")
    if data == "own":  # sets named on the command line (tests/test_hostile.py runs it)
        with pytest.raises(InstantiationException, match="lists no sets"):
            instantiate(cfg.data, _convert_="all")
        return
    first = next(s for s in cfg.data.sets.values() if s is not None)
    if not str(first.nbest).startswith(str(ROOT / "recipes")):
        need(SHARED)
    corpus = instantiate(cfg.data, _convert_="all")
    assert corpus.name == data
    assert corpus.metric_name in ("wer", "bleu")


@pytest.mark.parametrize("task", TASK_CONFIGS)
def test_every_task_config_composes(task):
    from hydra.utils import get_method

    cfg = compose_config(f"task={task}")
    assert cfg.task.name == task
    assert cfg.task._target_ == f"rescorer.tasks.{task}.run"
    assert callable(get_method(cfg.task._target_))


@pytest.mark.parametrize("scorer", [pytest.param(s, marks=pytest.mark.slow) if s == "pcfg" else s  # induces the treebank
                                    for s in sorted(p.stem for p in (CONF / "scorer").glob("*.yaml"))])
def test_every_scorer_config_instantiates(scorer, tiny_models, tmp_path):
    if scorer == "pcfg":  # its default grammar is induced from the treebank sample
        need(SHARED / "treebank")
    cfg = compose_config(f"scorer=[{scorer}]", f"model.masked.path={tiny_models['bert']}",
                         f"model.causal.path={tiny_models['gpt2']}", f"model.student.path={tiny_models['bert']}",
                         f"engine.store={tmp_path}/s.sqlite")
    if scorer == "student":  # trained by task=distill (tests/test_distill.py scores with real students)
        with pytest.raises(ConfigError, match="not a rescorer student"):
            scorers_of(cfg)
        return
    loaded = scorers_of(cfg)[scorer]
    assert loaded.kind == cfg.scorer[scorer].kind and loaded.score(["A CAT SAT"])[0] < 0


@pytest.mark.parametrize("group", ["search", "engine", "model"])
def test_every_search_engine_and_model_config_composes(group):
    for option in sorted(p.stem for p in (CONF / group).glob("*.yaml")):
        cfg = compose_config(f"{group}={option}")
        assert cfg[group] is not None


@pytest.mark.parametrize("experiment", sorted(p.stem for p in (CONF / "experiment").glob("*.yaml")))
def test_every_experiment_composes_and_its_data_instantiates(experiment):
    cfg = compose_config(f"+experiment={experiment}")
    if cfg.task.name == "minimal_pairs":  # reads `pairs`, not `data` (tests/test_pairs.py reads them)
        assert cfg.pairs._target_ == "rescorer.pairs.data.PairSet"
        return
    assert cfg.task.name in ("rescore", "distill")
    if experiment != "demo":
        need(SHARED)
    corpus = instantiate(cfg.data, _convert_="all")
    assert all(name in corpus.sets for name in cfg.data.sets if cfg.data.sets[name] is not None)
    if cfg.task.name == "distill":  # its training hypotheses are N-best sets too
        assert all(Path(spec.nbest).exists() for spec in cfg.task.hypotheses.values())


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
        assert entry["utterances"] == 300 and entry["hypotheses"] == 9000
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


# The command line up to its first heavy import: it stops there, printing which module that was.
STOP_AT_HEAVY_IMPORTS = """
import sys
class Stop:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("hydra", "omegaconf", "torch", "transformers"):
            print(f"importing {name}", flush=True)
            raise SystemExit(0)
sys.meta_path.insert(0, Stop())
sys.argv = ["rescorer", *sys.argv[1:]]
from rescorer.cli import main
main()
"""


def first_lines(*args: str, terminal: bool) -> list[str]:
    """What the command line prints before its first heavy import, its standard output a terminal or a pipe."""
    import pty

    reader, writer = pty.openpty() if terminal else os.pipe()
    with subprocess.Popen([sys.executable, "-c", STOP_AT_HEAVY_IMPORTS, *args], stdout=writer,
                          stderr=subprocess.DEVNULL) as process:
        os.close(writer)
        chunks = []
        while True:
            try:
                chunks.append(os.read(reader, 4096))
            except OSError:  # a terminal's end, once the program has exited
                break
            if not chunks[-1]:  # a pipe's end
                break
    os.close(reader)
    return b"".join(chunks).decode().splitlines()


def test_on_a_terminal_the_first_line_says_what_loads_before_any_heavy_import():
    assert first_lines("+experiment=demo", "engine.threads=1", terminal=True) == \
        ["rescorer: loading +experiment=demo…", "importing hydra"]
    assert first_lines("task=convert", "task.inputs=x", "--cfg", "job", terminal=True) == ["importing hydra"]
    assert first_lines("task=convert", "task.inputs=x", terminal=False) == ["importing hydra"]  # a pipe, a log


def test_unknown_override_is_a_clear_error(tmp_path):
    result = run_cli("data=nonexistent", cwd=tmp_path)
    assert result.returncode != 0
    assert "nonexistent" in result.stderr


def tiny_excerpt(tmp_path: Path, utterances: int = 30) -> Path:
    """The first ``utterances`` of each shipped demo set, as canonical JSONL with references."""
    for name in ("dev_other", "test_clean"):
        nbest = rescorer.read_nbest(DEMO / name, refs=DEMO / name / "ref.trn")
        rescorer.write_nbest(nbest.with_utterances(nbest.utterances[:utterances]), tmp_path / f"{name}.jsonl", "jsonl")
    return tmp_path


@pytest.mark.slow
def test_rescore_end_to_end_with_a_tiny_model(tmp_path, tiny_causal):
    data = tiny_excerpt(tmp_path)
    result = run_cli("task=rescore", "data=demo", "scorer=[ll]", f"model.causal.path={tiny_causal}",
                     f"data.sets.dev_other.nbest={data}/dev_other.jsonl", "data.sets.dev_other.refs=null",
                     "data.sets.dev_other.fmt=jsonl", f"data.sets.test_clean.nbest={data}/test_clean.jsonl",
                     "data.sets.test_clean.refs=null", "data.sets.test_clean.fmt=jsonl",
                     f"engine.store={tmp_path}/store.sqlite", f"out_dir={tmp_path}/out", "task.bootstrap=200",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out"
    report = json.loads((out / "report.json").read_text())
    assert report["metric"] == "wer" and report["tuned_on"] == "dev_other" and set(report["weights"]) == {"ll"}
    for name in ("dev_other", "test_clean"):
        entry = report["sets"][name]
        reread = rescorer.read_nbest(out / f"{name}.jsonl")
        best = [u.hyps[0].text for u in reread]
        assert entry["rescored"]["wer"] == pytest.approx(100 * jiwer.wer(reread.refs(), best), abs=1e-9)
        assert "ll" in reread.columns and "rescore" in reread.columns
        totals = [[h.scores["rescore"] for h in u.hyps] for u in reread]
        assert all(t == sorted(t, reverse=True) for t in totals)  # written re-ranked
        assert entry["ci95"]["low"] <= entry["rescored"]["wer"] - entry["baseline"]["wer"] <= entry["ci95"]["high"]
        lines = (out / name / "1best.txt").read_text().splitlines()
        assert [line.split(" ", 1)[1] if " " in line else "" for line in lines] == best
    assert (out / "weights_dev_other.png").stat().st_size > 1000
    assert report["search"]["settings"] == 21


def test_multirun_sweeps_scorer_selections(tmp_path):
    result = run_cli("-m", "task=evaluate", "data=demo", "scorer=[pll],[ll],[pll,ll]",
                     f"out_dir={tmp_path}/out/${{hydra:job.num}}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert sorted(os.listdir(tmp_path / "out")) == ["0", "1", "2"]
    assert "scorer=[pll,ll]" in result.stdout


@pytest.mark.parametrize("experiment", sorted(p.stem for p in (CONF / "experiment").glob("*.yaml")))
def test_every_experiment_uses_only_known_task_and_search_keys(experiment):
    from rescorer.tasks import check_keys

    cfg = compose_config(f"+experiment={experiment}")
    check_keys(cfg, "task", cfg.task.name)
    check_keys(cfg, "search", cfg.search.name)


def test_the_command_line_reads_hydra_flags_as_the_installed_hydra_does():
    """The flags the one-line checks parse before Hydra runs are the installed Hydra's own, each taking a value or
    not, with the same choices: an upgrade of Hydra that adds or changes one fails here."""
    from hydra._internal.utils import get_args_parser

    from rescorer.cli import hydra_parser

    def flags(parser):
        return {tuple(a.option_strings): (a.nargs if a.nargs != 0 else "none", a.const if a.nargs == "?" else None,
                                          a.choices) for a in parser._actions}

    ours, hydra = flags(hydra_parser()), flags(get_args_parser())
    assert ours == hydra
