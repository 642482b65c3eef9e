"""Values that cannot work are refused where they are read, one line each; what is accepted stays in bounds: weight
grids never leave their range, reports are always valid JSON, plots stay linear in the grid."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import rescorer
from rescorer.options import RunOptions
from rescorer.report import plots
from rescorer.combine import Column, SearchResult
from rescorer.io.sets import NBestSet
from rescorer.metrics import make_metric
from rescorer.report import write_report

from .conftest import DEMO, ROOT

GRIDS = [  # (range, step, the weights searched)
    ((0, 0.5), 0.3, [0.0, 0.3]),
    ((0, 1), 0.15, [0.0, 0.15, 0.3, 0.45, 0.6, 0.75, 0.9]),
    ((0, 1), 0.3, [0.0, 0.3, 0.6, 0.9]),
    ((0, 1), 0.5, [0.0, 0.5, 1.0]),
    ((0, 1), 0.1, [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]),
    ((0, 0.3), 0.1, [0.0, 0.1, 0.2, 0.3]),
    ((0.1, 0.7), 0.2, [0.1, 0.3, 0.5, 0.7]),
    ((0.2, 0.9), 0.35, [0.2, 0.55, 0.9]),
    ((-1, 1), 0.25, [-1.0, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0]),
    ((0, 1), 1 / 3, [0.0, 0.3333333333, 0.6666666667, 1.0]),
    ((0.5, 0.5), 0.1, [0.5]),
    ((0, 0.05), 0.1, [0.0]),
]


@pytest.mark.parametrize("bounds, step, expected", GRIDS)
def test_a_weight_grid_stays_inside_its_range_and_reaches_hi_when_hi_is_on_it(bounds, step, expected):
    column = Column("lm", range=bounds, step=step)
    assert column.grid.tolist() == expected
    assert column.size == len(expected)


RESCORE = ["task=rescore", "data=demo", "scorer=[]", "++data.sets.dev_other.every=15",
           "++data.sets.test_clean.every=15", "task.bootstrap=50", "engine.progress=false"]
CTC = "task.columns={ctc: {range: [0, 1], step: 0.5}}"
THREE = "task.columns={ctc: {step: 0.5}, decoder: {step: 0.5}, lm: {step: 0.5}}"
REFUSED = [  # (overrides, the words the one error line holds)
    pytest.param([*RESCORE, "task.columns=[ctc]"], ["task.columns", "['ctc']"], id="columns as a list"),
    pytest.param([*RESCORE, CTC, "task.columns=[ctc]"], ["task.columns=[ctc]", "merge"],
                 id="columns as a list over a mapping"),
    pytest.param(["task=evaluate", "task.name=rescore"], ["task.name='rescore'", "task=rescore"],
                 id="task.name of another task"),
    pytest.param(["task=evaluate", "hydra.run.dir=/proc/x"], ["hydra.run.dir=/proc/x"], id="run dir in /proc"),
    pytest.param(["task=evaluate", "++data.sets.dev_other.start=40", "++data.sets.dev_other.stop=10"],
                 ["data.sets.dev_other.stop=10", "start=40"], id="start after stop"),
    pytest.param(["task=evaluate", "++data.sets.dev_other.start=100000"],
                 ["data.sets.dev_other.start=100000", "past the last utterance"], id="start past the end"),
    pytest.param(["task=evaluate", "++data.sets.dev_other.every=two"], ["data.sets.dev_other.every", "'two'"],
                 id="every a word"),
    pytest.param(["task=evaluate", "++data.sets.dev_other.every=1.5"], ["data.sets.dev_other.every", "1.5"],
                 id="every a fraction"),
    pytest.param(["task=evaluate", "++data.sets.dev_other.top=2.5"], ["data.sets.dev_other.top", "2.5"],
                 id="top a fraction"),
    pytest.param(["task=evaluate", "++data.sets.dev_other.stop=abc"], ["data.sets.dev_other.stop", "'abc'"],
                 id="stop a word"),
    pytest.param([*RESCORE, CTC, "search=robust", "search.level=1.5"], ["search.level", "(0, 1)", "1.5"],
                 id="robust level above 1"),
    pytest.param([*RESCORE, CTC, "search=robust", "search.samples=0"], ["search.samples", "[1, 100000]", "0"],
                 id="no bootstrap samples"),
    pytest.param([*RESCORE, THREE, "search.restarts=0"], ["search.restarts", "[1, 10000]"], id="no restarts"),
    pytest.param([*RESCORE, CTC, "task.seed=abc"], ["task.seed", "'abc'"], id="seed a word"),
    pytest.param([*RESCORE, CTC, "task.halves=-3"], ["task.halves", "[0, 1000]", "-3"], id="negative halves"),
]


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": path}
    return subprocess.run([sys.executable, "-m", "rescorer.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def digest(root: Path) -> dict[str, str]:
    """Every file under ``root`` and its content hash."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def assert_refused(result: subprocess.CompletedProcess, expected: list[str]) -> None:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("rescorer: error: "), result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    for words in expected:
        assert words in lines[0], lines[0]


@pytest.fixture(scope="module")
def demo_digest() -> dict[str, str]:
    return digest(DEMO)


@pytest.mark.parametrize("overrides, expected", REFUSED)
def test_a_value_that_cannot_work_is_one_line_exit_2_and_touches_nothing(overrides, expected, demo_digest,
                                                                            tmp_path):
    result = run_cli(*overrides, f"out_dir={tmp_path}/out", f"engine.store={tmp_path}/s.sqlite", cwd=tmp_path)
    assert_refused(result, expected)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    assert digest(DEMO) == demo_digest


def test_a_config_dir_yaml_with_a_syntax_error_is_one_line_naming_the_file(tmp_path):
    broken = tmp_path / "conf" / "data" / "broken.yaml"
    broken.parent.mkdir(parents=True)
    broken.write_text("name: broken\nsets: [dev, {\n")
    result = run_cli("--config-dir", str(tmp_path / "conf"), "data=broken", f"out_dir={tmp_path}/out", cwd=tmp_path)
    assert_refused(result, [str(broken)])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["conf"]


def test_a_million_setting_search_is_reported_without_a_plot_and_says_why(tmp_path):
    sets = {name: {"nbest": str(DEMO / name), "refs": str(DEMO / name / "ref.trn"), "every": 15, "top": 5}
            for name in ("dev_other", "test_clean")}
    started = time.perf_counter()
    result = rescorer.rescore(dev="dev_other", sets=sets, columns={"ctc": {"range": [0, 1], "step": 1e-6}},
                              bootstrap=50, out_dir=tmp_path / "out")
    search = json.loads((tmp_path / "out" / "report.json").read_text())["search"]
    assert search["settings"] == 1_000_001 and search["plot"] is None
    assert "1,000,001 settings" in search["plot_note"] and result.report.to_json()["search"] == search
    assert not list((tmp_path / "out").glob("*.png")) and time.perf_counter() - started < 120


@pytest.mark.parametrize("columns", [1, 2, 3])
def test_a_weight_plot_of_the_largest_drawn_search_takes_seconds(columns, monkeypatch, tmp_path):
    rng = np.random.default_rng(0)
    side = round(plots.MAX_PLOTTED ** (1 / columns))
    tried = np.stack(np.meshgrid(*[np.arange(side) / side] * columns), -1).reshape(-1, columns)
    result = SearchResult({f"w{k}": 0.0 for k in range(columns)}, 0.1, "fast", len(tried), 0.0, tried,
                          rng.random(len(tried)))
    monkeypatch.setattr(plots, "save", lambda fig, path: fig)
    started = time.perf_counter()
    figure = plots.weight_plot(result, list(result.weights), make_metric("wer"), tmp_path / "w.png")
    assert figure is not None and time.perf_counter() - started < 20
    if columns != 2:
        expected = [result.values[tried[:, 0] == x].min() * 100 for x in np.unique(tried[:, 0])[:5]]
        np.testing.assert_allclose(figure.axes[0].lines[0].get_ydata()[:5], expected)
    plots.pyplot().close(figure)


def strict_json(text: str) -> object:
    """``text`` parsed as JSON, refusing the NaN and Infinity that Python's json module writes by default."""
    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_a_report_with_nan_or_infinite_values_is_valid_json_naming_each_one(tmp_path, capsys):
    report = {"sets": {"dev": {"wer": float("nan"), "ci": [np.float64(1.5), float("inf")]}},
              "halves": {"fast": {"mean": np.float32("nan"), "deltas": [-float("inf")]}}, "count": np.int64(3)}
    path = write_report(tmp_path, report, ["wer"], "title")
    written = strict_json(path.read_text())
    assert written["sets"] == {"dev": {"wer": None, "ci": [1.5, None]}} and written["count"] == 3
    assert written["halves"] == {"fast": {"mean": None, "deltas": [None]}}
    assert written["non_finite"] == {"sets.dev.wer": "nan", "sets.dev.ci[1]": "inf", "halves.fast.mean": "nan",
                                     "halves.fast.deltas[0]": "-inf"}


def test_a_finite_report_is_written_as_it_is(tmp_path, capsys):
    report = {"sets": {"dev": {"wer": 12.5, "name": "dev", "ok": True, "none": None}}}
    assert strict_json(write_report(tmp_path, report, ["wer"], "title").read_text()) == report


def test_a_rescoring_run_with_halves_writes_strict_json(tmp_path):
    sets = {name: {"nbest": str(DEMO / name), "refs": str(DEMO / name / "ref.trn"), "every": 15, "top": 5}
            for name in ("dev_other", "test_clean")}
    rescorer.pipeline.rescore_loaded({name: NBestSet(**spec).read() for name, spec in sets.items()}, {},
                                    make_metric("wer"), columns=[Column("ctc", step=0.5)],
                                    run=RunOptions(bootstrap=50, halves=2), out_dir=tmp_path / "out")
    halves = strict_json((tmp_path / "out" / "report.json").read_text())["halves"]
    assert len(halves["fast"]["deltas"]) == 2 and isinstance(halves["robust"]["mean"], float)


@pytest.mark.parametrize("task", ["rescore", "evaluate"])
def test_a_run_that_scores_nothing_never_opens_the_store(task, tmp_path):
    (tmp_path / "afile").write_text("x")
    store = tmp_path / "afile" / "s.sqlite"  # cannot be created (read-only or not a directory alike)
    overrides = [*RESCORE, CTC] if task == "rescore" else ["task=evaluate"]
    result = run_cli(*overrides, f"out_dir={tmp_path}/out", f"engine.store={store}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert strict_json((tmp_path / "out" / "report.json").read_text())["task"] == task


def test_the_store_opens_when_a_scorer_first_scores(tmp_path, tiny_causal):
    path = tmp_path / "store" / "s.sqlite"
    scorer = rescorer.load_scorer("ll", str(tiny_causal), store=str(path), progress=False)
    assert not path.parent.exists()
    scorer.score([])
    assert not path.parent.exists()
    first = scorer.score(["A CAT SAT"])
    assert path.is_file() and scorer.engine.store.count() == 1 and scorer.score(["A CAT SAT"]) == first


def demo_options(name: str, **changed) -> dict:
    """NBestSet options of a 20-utterance, 5-best excerpt of a shipped demo set."""
    return {"nbest": str(DEMO / name), "refs": str(DEMO / name / "ref.trn"), "every": 15, "top": 5, **changed}


@pytest.fixture(scope="module")
def api(tmp_path_factory) -> dict:
    """What the misuses start from: a dev excerpt read, the same with an utterance twice, a tuned.yaml, a folder."""
    root = tmp_path_factory.mktemp("api")
    dev = NBestSet(**demo_options("dev_other")).read()
    rescorer.rescore(dev=demo_options("dev_other"), columns=COLUMNS, bootstrap=50, out_dir=root / "tuned")
    return {"dev": dev, "twice": dev.with_utterances([dev.utterances[0], *dev.utterances]), "root": root,
            "tuned": root / "tuned" / "tuned.yaml"}


COLUMNS = {"ctc": {"range": [0, 1], "step": 0.5}}
DEV = demo_options("dev_other")
TEST = demo_options("test_clean")
MISUSES = [  # (what is called with what, the argument the error names)
    pytest.param(lambda a: rescorer.rescore(dev=DEV, sets=[TEST], columns=COLUMNS), "sets", id="sets a list"),
    pytest.param(lambda a: rescorer.rescore(dev=DEV, columns="ctc"), "columns", id="columns a name"),
    pytest.param(lambda a: rescorer.rescore(dev=DEV, columns={"ctc": 3}), "column ctc", id="column a number"),
    pytest.param(lambda a: rescorer.rescore(dev=DEV, columns=COLUMNS, search=3), "search", id="search a number"),
    pytest.param(lambda a: rescorer.rescore(dev=DEV, columns=COLUMNS, search="gird"), "'gird'",
                 id="search misspelt"),
    pytest.param(lambda a: rescorer.rescore(dev=DEV, columns=COLUMNS, search={"name": "robust", "level": 2}),
                 "search.level", id="robust level above 1"),
    pytest.param(lambda a: rescorer.rescore(dev=DEV, scorers=["ll"], columns=COLUMNS), "scorers", id="scorers a list"),
    pytest.param(lambda a: rescorer.rescore(dev=DEV, scorers={"ll": 3}, columns=COLUMNS), "scorer 'll'",
                 id="scorer a number"),
    pytest.param(lambda a: rescorer.rescore(dev=DEV, columns=COLUMNS, metric=3), "metric", id="metric a number"),
    pytest.param(lambda a: rescorer.rescore(dev=DEV, columns=COLUMNS, base=3), "base", id="base a number"),
    pytest.param(lambda a: rescorer.rescore(dev=DEV, columns=COLUMNS, bootstrap=0), "bootstrap",
                 id="no resamples"),
    pytest.param(lambda a: rescorer.rescore(dev=DEV, columns=COLUMNS, seed=-1), "seed", id="negative seed"),
    pytest.param(lambda a: rescorer.rescore(dev=DEV, columns=COLUMNS, out_dir=3), "out_dir",
                 id="out_dir a number"),
    pytest.param(lambda a: rescorer.rescore(dev=DEV, scorers={"ll": {"kind": "ll", "model": "x"}}, engine="local"), "engine",
                 id="engine a name"),
    pytest.param(lambda a: rescorer.rescore(dev={**DEV, "top": -3}, columns=COLUMNS), "dev.top",
                 id="negative top"),
    pytest.param(lambda a: rescorer.rescore(dev="test", sets={"test": {**TEST, "every": -3}}, columns=COLUMNS),
                 "sets['test'].every", id="negative every"),
    pytest.param(lambda a: rescorer.rescore(dev={**DEV, "evry": 2}, columns=COLUMNS), "'evry'",
                 id="misspelt set option"),
    pytest.param(lambda a: rescorer.rescore(dev=a["twice"], columns=COLUMNS), "dev", id="an utterance id twice"),
    pytest.param(lambda a: rescorer.rescore(dev=rescorer.NBest(("u1", "u2")), columns=COLUMNS),
                 "dev.utterances[0]", id="utterances as strings"),
    pytest.param(lambda a: rescorer.pipeline.rescore_loaded({"dev": DEV}, {}, make_metric("wer")), "sets['dev']",
                 id="steps given options for an NBest"),
    pytest.param(lambda a: rescorer.read_nbest(123), "path", id="read a number"),
    pytest.param(lambda a: rescorer.read_nbest(DEMO / "dev_other", refs=5), "refs", id="refs a number"),
    pytest.param(lambda a: rescorer.write_nbest(None, a["root"] / "x.jsonl"), "nbest", id="write None"),
    pytest.param(lambda a: rescorer.write_nbest(a["dev"], 123, fmt="jsonl"), "path", id="write to a number"),
    pytest.param(lambda a: rescorer.write_nbest(a["twice"], a["root"] / "twice.jsonl"), "nbest",
                 id="write an utterance id twice"),
    pytest.param(lambda a: rescorer.apply(TEST, tuned=42), "tuned", id="tuned a number"),
    pytest.param(lambda a: rescorer.apply(42, tuned=a["tuned"]), "sets", id="apply to a number"),
    pytest.param(lambda a: rescorer.apply(TEST, a["tuned"], scorers=["x"]), "scorers", id="apply scorers a list"),
    pytest.param(lambda a: rescorer.apply(TEST, a["tuned"], bootstrap=-1), "bootstrap", id="apply no resamples"),
    pytest.param(lambda a: rescorer.apply(TEST, a["tuned"], accept_changed_models="yes"), "accept_changed_models",
                 id="accept a word"),
    pytest.param(lambda a: rescorer.load_scorer(3), "kind", id="scorer kind a number"),
    pytest.param(lambda a: rescorer.load_scorer("ll", "x", budget=-1), "engine.budget", id="negative budget"),
]


@pytest.mark.parametrize("call, argument", MISUSES)
def test_a_python_api_misuse_is_a_rescorer_error_naming_the_argument(call, argument, api):
    with pytest.raises(rescorer.RescorerError) as raised:
        call(api)
    message = str(raised.value)
    assert argument in message and "\n" not in message, message
    assert not [p.name for p in api["root"].iterdir() if p.name != "tuned"]


@pytest.mark.parametrize("kind", ["empty directory", "a file", "home"])
def test_a_student_path_that_is_not_a_model_is_one_line_and_home_is_expanded(kind, tmp_path, monkeypatch):
    from rescorer.devtools import build_student, train_tokenizer

    from .models import demo_texts

    monkeypatch.setenv("HOME", str(tmp_path))
    if kind == "home":
        build_student("tiny", train_tokenizer("wordpiece", demo_texts(), 300), tmp_path / "student")
        scorer = rescorer.load_scorer("student", "~/student", store=None, progress=False)
        assert len(scorer.score(["a cat", "a dog"])) == 2
        return
    path = tmp_path / "model"
    path.mkdir() if kind == "empty directory" else path.write_text("not a model\n")
    with pytest.raises(rescorer.ScorerError, match=f"cannot load model '{path}'"):
        rescorer.load_scorer("student", str(path))
