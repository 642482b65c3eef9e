"""Hostile command lines: each bad value gets one stderr line naming it, exit status 2, no traceback, and leaves
no output behind."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import DEMO, needs_minilm
from .test_cli import run_cli

RESCORER = [sys.executable, "-m", "rescorer.cli"]
# A rescoring run that loads no LM: the ESPnet score plus a tuned weight on its own ctc column, on a small subset.
BASE = ["task=rescore", "data=demo", "scorer=[]", "++data.sets.dev_other.every=15", "++data.sets.test_clean.every=15",
        "task.bootstrap=50", "engine.progress=false"]
CTC = "task.columns={ctc: {range: [0, 1], step: 0.5}}"


def run(tmp_path: Path, *overrides: str, out: str | None = None, **environ: str) -> subprocess.CompletedProcess:
    out = out or str(tmp_path / "out")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", **environ}
    return subprocess.run([*RESCORER, *BASE, f"out_dir={out}", f"engine.store={tmp_path}/s.sqlite", *overrides],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def assert_one_line_exit_2(result: subprocess.CompletedProcess, *expected: str) -> None:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("rescorer: error: "), result.stderr
    assert "Traceback" not in result.stderr
    for part in expected:
        assert part in lines[0], lines[0]


CASES = {
    "misspelt key in a column": (["task.columns={ctc: {rnage: [0, 1]}}"], ["column ctc", "'rnage'", "range"]),
    "weight as a string": (["task.columns={ctc: {range: [a, 1]}}"], ["column ctc", "range=('a', 1)"]),
    "step as a string": (["task.columns={ctc: {step: x}}"], ["column ctc", "step='x'"]),
    "budget not a number": ([CTC, "engine.budget=abc"], ["engine.budget", "'abc'"]),
    "negative bootstrap": ([CTC, "task.bootstrap=-5"], ["task.bootstrap", "-5"]),
    "a billion resamples": ([CTC, "task.bootstrap=1000000000"], ["task.bootstrap must be an integer in [1, 100000]"]),
    "a billion half-splits": ([CTC, "task.halves=1000000000"], ["task.halves must be an integer in [0, 1000]"]),
    "a billion threads": ([CTC, "engine.threads=1000000000"], ["engine.threads must be an integer in [1, 4096]"]),
    "a grid of 10^18 settings": (["task.columns={ctc: {range: [0, 1e18], step: 1}}"], ["ctc", "settings"]),
    "a dev set starting past its last utterance": ([CTC, "++data.sets.dev_other.start=100000"],
                                                   ["data.sets.dev_other.start=100000", "past the last utterance"]),
    "unset environment variable": ([CTC, "++task.tune_on=${oc.env:RESCORER_NO_SUCH_VARIABLE}"],
                                   ["RESCORER_NO_SUCH_VARIABLE"]),
    "task.name=os": (["task.name=os"], ["task.name='os'"]),
    "misspelt task key": (["+task.colums={ctc: {}}"], ["'colums'", "columns"]),
    "missing N-best path": ([CTC, "data.sets.dev_other.nbest=/no/such/dir"], ["data.sets.dev_other.nbest", "/no/such/dir"]),
    "bad scorer variant": ([CTC, "scorer=[pll]", "scorer.pll.variant=random"], ["variant", "'random'"]),
    "misspelt device": ([CTC, "scorer=[pll]", "engine.device=cdua"], ["device", "'cdua'"]),
    "unknown dtype": ([CTC, "scorer=[pll]", "engine.dtype=float17"], ["dtype", "'float17'"]),
    "unknown case": ([CTC, "scorer=[pll]", "scorer.pll.case=shout"], ["case", "'shout'"]),
    "a set name with a dot": ([CTC, "+data.sets.eval.2024.nbest=" + str(DEMO / "test_clean")],
                              ["data.sets.eval has no nbest but a key '2024'", "data.sets.eval_2024.nbest=PATH"]),
    "references without a list": ([CTC, "+data.sets.eval.refs=" + str(DEMO / "test_clean" / "ref.trn")],
                                  ["data.sets.eval.refs is given but data.sets.eval.nbest is not"]),
    "misspelt data set key": ([CTC, "++data.sets.dev_other.evry=3"], ["dev_other", "'evry'", "every"]),
    "misspelt engine key": ([CTC, "++engine.bugdet=5"], ["'bugdet'", "budget"]),
    "tuning on a set that is not there": ([CTC, "task.tune_on=abc"],
                                          ["task.tune_on='abc' is not one of the sets", "dev_other, test_clean"]),
    "base penalty without a base name": ([CTC, "task.base.penalty=abc"],
                                         ["unknown task.base.penalty 'abc' (choose from none, gnmt, tokens, auto)"]),
    "device with no scorer": ([CTC, "engine.device=xyz"], ["engine.device must be one of auto, cpu", "'xyz'"]),
    "dtype with no scorer": ([CTC, "engine.dtype=xyz"], ["unknown engine.dtype 'xyz' (choose from auto, fp32"]),
    "base name as a list": ([CTC, "task.base.name=[1,2]"], ["base.name must be a string or null, not [1, 2]"]),
    "tuning set as a list": ([CTC, "task.tune_on=[1]"], ["task.tune_on must be a string or null, not [1]"]),
}


SLOW_CASES = {"misspelt device", "unknown dtype"}  # over 5 s each


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c in SLOW_CASES else c for c in sorted(CASES)])
def test_bad_values_get_one_line_and_exit_2_and_leave_nothing(case, tmp_path):
    overrides, expected = CASES[case]
    result = run(tmp_path, *overrides)
    assert_one_line_exit_2(result, *expected)
    assert not (tmp_path / "out").exists()


APPLY_CASES = {
    "a metric name that is a list": (["data=own", f"data.sets.test.nbest={DEMO / 'test_clean'}", "data.metric.name=[1,2]"],
                                     ["data.metric.name must be one of auto, wer, bleu, not [1, 2]"]),
    "a chunk that is not a number": (["data=own", f"data.sets.test.nbest={DEMO / 'test_clean'}", "task.chunk=abc"],
                                     ["task.chunk must be an integer ≥ 1, not 'abc'"]),
    "data sets beside inputs": (["data=own", f"data.sets.test.nbest={DEMO / 'test_clean'}",
                                 f"task.inputs={DEMO / 'test_clean'}"], ["task.inputs and data", "give task.inputs"]),
    "a data group beside inputs": (["data=moses", f"task.inputs={DEMO / 'test_clean'}"], ["task.inputs and data"]),
}


@pytest.mark.parametrize("case", sorted(APPLY_CASES))
def test_an_apply_refuses_options_it_does_not_read_when_they_are_malformed_or_clash(case, tmp_path):
    overrides, expected = APPLY_CASES[case]
    tuned = tmp_path / "tuned.yaml"
    tuned.write_text("not read: the options are refused first\n")
    result = subprocess.run([*RESCORER, "task=apply", f"task.tuned={tuned}", f"out_dir={tmp_path / 'out'}",
                             "engine.store=null", *overrides], cwd=tmp_path, capture_output=True, text=True,
                            timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert_one_line_exit_2(result, *expected)
    assert not (tmp_path / "out").exists()


# A tuned rescorer of the list's own columns (no model), and the command lines that read an N-best list.
TUNED = "base: {name: score}\ncolumns: {ctc: {weight: 0.5}}\nmetric: {name: wer}\nscorers: {}\n"
COMMANDS = {"rescore": ["task=rescore", "data=own", "scorer=[]", "data.sets.dev.nbest={list}"],
            "apply": ["task=apply", "task.tuned={tuned}", "data=own", "data.sets.test.nbest={list}"],
            "sharded apply": ["task=apply", "task.tuned={tuned}", "task.inputs={list}"]}
GOOD_ROW = '{"id": "u1", "ref": "a b", "hyps": [{"text": "a b", "scores": {"score": -1.0, "ctc": -2.0}}]}'
UNREADABLE_ROWS = {"lone surrogate": (GOOD_ROW.replace('"u1"', '"u\\ud800"'), "lone surrogate escape \\ud800"),
                   "nested too deep": (GOOD_ROW.replace('"hyps"', '"x": ' + "[" * 100_000 + "]" * 100_000 + ', "hyps"'),
                                       "nested too deep")}


def run_on_list(tmp_path: Path, command: str, rows: list[str], *overrides: str, tuned: str = TUNED
                ) -> subprocess.CompletedProcess:
    """``command`` (of :data:`COMMANDS`) on a JSONL list of ``rows`` with ``tuned`` as its tuned rescorer."""
    (tmp_path / "list.jsonl").write_text("".join(row + "\n" for row in rows), encoding="utf-8")
    (tmp_path / "tuned.yaml").write_text(tuned, encoding="utf-8")
    paths = {"list": tmp_path / "list.jsonl", "tuned": tmp_path / "tuned.yaml"}
    return run_cli(*(part.format(**paths) for part in COMMANDS[command]), f"out_dir={tmp_path}/out",
                   f"engine.store={tmp_path}/s.sqlite", "engine.progress=false", *overrides, cwd=tmp_path)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("bad", UNREADABLE_ROWS)
def test_a_json_line_no_decoder_can_hold_is_one_line_naming_its_file_and_line_on_every_command(bad, command,
                                                                                               tmp_path):
    row, says = UNREADABLE_ROWS[bad]
    rows = [GOOD_ROW.replace("u1", "u0"), row]
    result = run_on_list(tmp_path, command, rows)
    assert_one_line_exit_2(result, f"{tmp_path / 'list.jsonl'}:2: invalid JSON", says)
    assert (tmp_path / "list.jsonl").read_text(encoding="utf-8") == "".join(row + "\n" for row in rows)
    assert not (tmp_path / "out" / "shards").exists() or not any((tmp_path / "out" / "shards").iterdir())


@pytest.mark.parametrize("bad, says", [('"\\udc00"', "lone surrogate escape \\udc00 is not valid Unicode"),
                                       ("[" * 100_000 + "]" * 100_000, "nested too deep")],
                         ids=["lone surrogate", "nested too deep"])
def test_a_tuned_file_no_loader_can_hold_is_one_line_naming_it(bad, says, tmp_path):
    result = run_on_list(tmp_path, "apply", [GOOD_ROW], tuned=TUNED + f"tuned_on: {bad}\n")
    assert_one_line_exit_2(result, f"{tmp_path / 'tuned.yaml'}: not a readable tuned.yaml", says, "line 5")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("override, says", [
    ("task.fmt=[1,2]", "task.fmt must be one of auto, espnet2, kaldi, "),
    ("task.fmt=jsnl", "unknown task.fmt 'jsnl', did you mean 'jsonl'? (choose from auto, espnet2, "),
    ("task.inputs=5", "task.inputs must be a path or a list of paths"),
], ids=["format as a list", "misspelt format", "inputs as a number"])
def test_an_apply_option_of_the_wrong_type_is_one_line_naming_the_key_and_its_choices(override, says, tmp_path):
    result = run_on_list(tmp_path, "apply", [GOOD_ROW], override)
    assert_one_line_exit_2(result, says)
    assert not (tmp_path / "out").exists()


def test_out_dir_under_a_file_or_in_proc(tmp_path):
    (tmp_path / "afile").write_text("x")
    assert_one_line_exit_2(run(tmp_path, CTC, out=str(tmp_path / "afile" / "sub")), "out_dir=", "afile")
    assert_one_line_exit_2(run(tmp_path, CTC, out="/proc/rescorer-test"), "out_dir=/proc/rescorer-test")
    assert (tmp_path / "afile").read_text() == "x"


@pytest.mark.slow
def test_a_failed_run_leaves_a_reused_out_dir_as_it_was(tmp_path):
    good = run(tmp_path, CTC)
    assert good.returncode == 0, good.stderr
    before = {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    assert_one_line_exit_2(run(tmp_path, "task.columns={ctc: {range: [0, 1], step: 0.5}, nosuch: {}}"), "nosuch")
    assert {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []


def test_out_dir_that_is_not_a_rescorer_run_is_refused(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "thesis.tex").write_text("mine")
    assert_one_line_exit_2(run(tmp_path, CTC), "out_dir=", "report.json")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["thesis.tex"]


@needs_minilm
@pytest.mark.parametrize("after_store", [None, *(pytest.param(s, marks=pytest.mark.slow) for s in (0.0, 5.0))])
def test_ctrl_c_prints_one_line_and_exits_130(tmp_path, after_store):
    """Ctrl-C while the package imports (None: 0.3 s after start, before any config), while torch and the model load
    and while scoring: an interrupt inside a half-done import once gave a killed-by-SIGINT exit and extra lines."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    # A background job inherits SIGINT ignored (CI may start the suite so): give the run the terminal's default.
    proc = subprocess.Popen([*RESCORER, *BASE, "scorer=[pll]", "++data.sets.dev_other.every=1",
                             f"out_dir={tmp_path}/out", f"engine.store={tmp_path}/s.sqlite"],
                            cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        if after_store is None:
            time.sleep(0.3)
        else:
            deadline = time.time() + 240
            while time.time() < deadline and not (tmp_path / "s.sqlite").exists():
                time.sleep(0.05)
            time.sleep(after_store)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "interrupted" in lines[0] and "resume" in lines[0], stderr
    assert not (tmp_path / "out").exists()
    assert DEMO.exists()


SWALLOWING = """
import time
from rescorer.cli import exit_on_interrupt
exit_on_interrupt()
print("ready", flush=True)
for _ in range(100):
    try:
        time.sleep(0.1)
    except BaseException:  # a library's bare except: it once kept a start-up interrupted in CI running
        pass
"""


def test_ctrl_c_is_not_swallowed_by_a_bare_except():
    proc = subprocess.Popen([sys.executable, "-c", SWALLOWING], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130 and stderr.strip().startswith("rescorer: interrupted"), stderr


OUT_OF_REACH = {"HF_ENDPOINT": "http://127.0.0.1:9"}  # a closed local port: the hub refuses at once


NEVER_WAITS = """
import sys, time
def refuse(seconds):  # a retry with back-off, or a wait for the network, would sleep
    raise SystemExit(f"slept {seconds} s")
time.sleep = refuse
sys.argv = ["rescorer", *sys.argv[1:]]
from rescorer.cli import main
main()
"""


@pytest.mark.parametrize("hub", [{"HF_HUB_OFFLINE": "1"}, OUT_OF_REACH], ids=["offline", "out_of_reach"])
def test_a_model_name_neither_local_nor_cached_fails_in_one_line_without_waiting(tmp_path, hub):
    """No retry, back-off or wait for the network: the run would sleep (refused here), whatever the machine's load."""
    env = {**{k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")},
           "HF_HUB_CACHE": str(tmp_path / "hub-cache"), **hub}
    result = subprocess.run([sys.executable, "-c", NEVER_WAITS, "task=score", "data=demo", "scorer=[ll]",
                             "model.causal.path=surely-not-a-model-xyz", f"out_dir={tmp_path}/out"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert "slept" not in result.stderr
    assert_one_line_exit_2(result, "'surely-not-a-model-xyz'", "neither a local directory nor in the local "
                           "Hugging Face cache", "--local-dir")
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_the_readmes_own_data_command_works_as_written(tmp_path):
    """README: `rescorer task=rescore data=own data.sets.dev.nbest=DEV data.sets.dev.refs=DEV_REFS
    data.sets.test.nbest=TEST data.sets.test.refs=TEST_REFS`."""
    sets = {name: DEMO / part for name, part in (("dev", "dev_other"), ("test", "test_clean"))}
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run([*RESCORER, "task=rescore", "data=own", "scorer=[]", CTC, "task.bootstrap=50",
                             *(f"data.sets.{n}.nbest={p}" for n, p in sets.items()),
                             *(f"data.sets.{n}.refs={p}/ref.trn" for n, p in sets.items()),
                             f"out_dir={tmp_path}/out", f"engine.store={tmp_path}/s.sqlite"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["tuned_on"] == "dev" and set(report["sets"]) == {"dev", "test"}


def damaged_store(path: Path) -> None:
    """A real store with many pages, then a middle page overwritten with garbage."""
    from rescorer.store import ScoreStore

    with ScoreStore(path) as store:
        store.put("sig", {f"text {i} " * 20: (-1.0, [-0.5] * 40) for i in range(2000)})
        store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    middle = (len(data) // 4096 // 2) * 4096
    data[middle + 100 : middle + 3000] = os.urandom(2900)
    path.write_bytes(bytes(data))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["damaged", "not a database", "under a file"])
def test_store_problems_are_one_line_naming_the_store(kind, tmp_path, tiny_causal):
    store = tmp_path / "s.sqlite"
    if kind == "damaged":
        damaged_store(store)
    elif kind == "not a database":
        store.write_text("this is not sqlite\n" * 400)
    else:
        (tmp_path / "afile").write_text("x")
        store = tmp_path / "afile" / "s.sqlite"
    result = run(tmp_path, "scorer=[ll]", f"model.causal.path={tiny_causal}", f"engine.store={store}")
    assert_one_line_exit_2(result, str(store))
    if kind != "under a file":
        assert "move it aside" in result.stderr and "delete" not in result.stderr  # it may be someone's input
    if kind == "not a database":
        assert "point engine.store at a new file" in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("opened", [False, True])
def test_an_interrupt_names_the_store_only_when_it_holds_scores(opened, tmp_path):
    """SIGTERM (143) or Ctrl-C (130) says where finished scores are only when the store was opened (it exists)."""
    store = tmp_path / "s.sqlite"
    if opened:
        store.write_bytes(b"")
    code = f"from rescorer.cli import interrupted; interrupted({{'engine': {{'store': {str(store)!r}}}}}, 143)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 143 and result.stderr.count("\n") == 1
    assert ("finished scores are in" in result.stderr) is opened and "rerun the same command" in result.stderr


def test_a_shipped_data_config_without_its_data_says_which_data_and_how_to_point_at_it(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "RESCORER_DATA": str(tmp_path / "nowhere")}
    result = subprocess.run([*RESCORER, "task=rescore", "data=moses", f"out_dir={tmp_path}/out"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    assert_one_line_exit_2(result, f"data=moses reads {tmp_path / 'nowhere' / 'moses-nbest'}", "../shared/data",
                           "RESCORER_DATA=DIR")


def test_once_a_run_is_done_a_late_interrupt_has_nothing_to_stop(monkeypatch):
    """After the task returned (its outputs in place), Ctrl-C and SIGTERM are ignored for the moments the process
    takes to exit, instead of killing it silently with 143 while Python shuts down."""
    import logging

    import rescorer.cli as cli
    import rescorer.tasks as tasks

    ran = []
    monkeypatch.setattr(tasks, "run_task", lambda cfg: ran.append(cfg))
    saved = {signum: signal.getsignal(signum) for signum in cli.SIGNAL_STATUS}
    logger = logging.getLogger("rescorer")
    handlers, propagate, level = logger.handlers[:], logger.propagate, logger.level
    try:
        cli.run({"engine": {}})
        assert ran and all(signal.getsignal(signum) is signal.SIG_IGN for signum in cli.SIGNAL_STATUS)
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)
        logger.handlers[:], logger.propagate = handlers, propagate
        logger.setLevel(level)


@pytest.mark.parametrize("columns", [80, 100, 200])
def test_the_table_fits_the_terminal_and_the_signature_stands_whole_on_its_line(columns, tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": str(columns)}
    result = subprocess.run([*RESCORER, *BASE, CTC, f"out_dir={tmp_path}/out", f"engine.store={tmp_path}/s.sqlite"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    table = [line for line in result.stdout.splitlines() if line[:1] in "┏┃┡│└"]
    assert len(table) >= 5 and all(len(line) <= columns and line[-1] in "┓┃┩│┘" for line in table), table
    signature = json.loads((tmp_path / "out" / "report.json").read_text())["signature"]
    assert signature in result.stdout.splitlines()  # one line, unbroken, whatever the width
    assert "dev_other" in result.stdout and "test_clean" in result.stdout  # names are never cut


@pytest.mark.slow
def test_a_first_start_on_a_fresh_home_shows_nothing_of_matplotlibs_font_cache(tmp_path):
    """matplotlib builds its font cache on its first import under a new home and logs that it did."""
    (tmp_path / "home").mkdir()
    result = run(tmp_path, CTC, HOME=str(tmp_path / "home"), MPLCONFIGDIR=str(tmp_path / "mpl"))
    assert result.returncode == 0, result.stderr
    assert list((tmp_path / "mpl").glob("fontlist-*.json")), "the font cache was not built by this run"
    assert (tmp_path / "out" / "weights_dev_other.png").is_file()
    assert "fontManager" not in result.stdout + result.stderr and "matplotlib" not in result.stdout + result.stderr
