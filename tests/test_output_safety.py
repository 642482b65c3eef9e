"""A run never writes outside out_dir or over its inputs: set names are plain names, an out_dir that holds, is or is
inside what the run reads is refused, staging of killed runs goes away, and inputs that cannot be read safely (pipes,
symlink loops, ids their outputs cannot hold) are one line naming the file. Refusals from the command line are checked
as a user sees them: exit 2, one ``rescorer: error:`` line, no traceback, every file as it was."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import rescorer
from rescorer.errors import ConfigError, NBestFormatError
from rescorer.files import atomic_dir, staging_prefix, write_text
from rescorer.io import read_nbest
from rescorer.outdir import RunDir

from .conftest import DEMO, ROOT
from .test_hostile import CTC, RESCORER, assert_one_line_exit_2

RUN = ["task=rescore", "data=own", "scorer=[]", CTC, "task.bootstrap=50", "engine.progress=false"]
SUBSET = ["data.sets.dev.every=15", "data.sets.dev.top=5"]


def rescorer_cli(cwd: Path, *overrides: str, **popen) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run([*RESCORER, *overrides], cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
                          **popen)


def checksums(root: Path) -> dict[str, str]:
    """Every file under ``root`` (hidden ones too, links followed where they lead somewhere) and its SHA-256."""
    return {str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(root.rglob("*")) if path.is_file()}


def assert_refused_leaving_all_as_it_was(root: Path, *overrides: str, expected: tuple[str, ...] = (),
                                         **popen) -> str:
    """Run the CLI in ``root``: one error line holding ``expected``, and not one file under ``root`` changed."""
    before = checksums(root)
    result = rescorer_cli(root, *overrides, **popen)
    assert_one_line_exit_2(result, *expected)
    assert checksums(root) == before
    return result.stderr


@pytest.fixture(scope="module")
def earlier_run(tmp_path_factory) -> Path:
    """A demo ESPnet2 list (``dev``) and an earlier run's directory (``o/chain``) made from it."""
    root = tmp_path_factory.mktemp("earlier")
    shutil.copytree(DEMO / "dev_other", root / "dev")
    result = rescorer_cli(root, *RUN, *SUBSET, "data.sets.dev.nbest=dev", "data.sets.dev.refs=dev/ref.trn",
                          "out_dir=o/chain", "engine.store=s.sqlite")
    assert result.returncode == 0, result.stderr
    shutil.copy(root / "dev" / "ref.trn", root / "o" / "chain" / "ref.trn")
    return root


@pytest.fixture
def workspace(earlier_run, tmp_path) -> Path:
    shutil.copytree(earlier_run, tmp_path / "w", symlinks=True)
    return tmp_path / "w"


# ---------------------------------------------------------------- inputs that cannot be read safely
@pytest.mark.parametrize("which", ["nbest", "refs"])
def test_a_fifo_is_refused_before_it_is_opened(workspace, which):
    os.mkfifo(workspace / "fifo")  # no writer: opening it would wait for ever
    paths = {"nbest": "dev", "refs": "dev/ref.trn", which: "fifo"}
    assert_refused_leaving_all_as_it_was(
        workspace, *RUN, f"data.sets.dev.nbest={paths['nbest']}", f"data.sets.dev.refs={paths['refs']}",
        "out_dir=o/new", "engine.store=s.sqlite", expected=("fifo: not a regular file but a pipe",))


def test_a_pipe_is_refused_without_consuming_it(workspace):
    read_end, write_end = os.pipe()
    os.write(write_end, (workspace / "o" / "chain" / "dev.jsonl").read_bytes()[:4096])
    os.close(write_end)
    try:
        assert_refused_leaving_all_as_it_was(
            workspace, *RUN, f"data.sets.dev.nbest=/dev/fd/{read_end}", "out_dir=o/new", "engine.store=s.sqlite",
            expected=(f"/dev/fd/{read_end}: not a regular file but a pipe", "save it to a file first"),
            pass_fds=(read_end,))
        assert os.read(read_end, 20) == b'{"nbest":{"fmt":"esp'
    finally:
        os.close(read_end)


def test_pipes_are_refused_by_the_readers(tmp_path):
    read_end, write_end = os.pipe()
    os.close(write_end)
    try:
        for fmt in ("auto", "jsonl"):
            with pytest.raises(NBestFormatError, match="not a regular file but a pipe"):
                read_nbest(f"/dev/fd/{read_end}", fmt)
        with pytest.raises(NBestFormatError, match=f"/dev/fd/{read_end}: not a regular file but a pipe"):
            read_nbest(DEMO / "dev_other", refs=f"/dev/fd/{read_end}")
    finally:
        os.close(read_end)


@pytest.mark.parametrize("link, problem", [("scores", "symbolic link loop"), ("missing", "symbolic link to nothing")])
def test_a_broken_scores_link_is_an_error_naming_it(tmp_path, link, problem):
    shutil.copytree(DEMO / "dev_other", tmp_path / "dev")
    scores = tmp_path / "dev" / "2best_recog" / "scores"
    scores.unlink()
    scores.symlink_to(link)
    with pytest.raises(NBestFormatError) as info:
        read_nbest(tmp_path / "dev", "espnet2")
    assert str(info.value).startswith(f"{scores}: {problem}")


# ---------------------------------------------------------------- staging of killed runs, SIGTERM
def dead_pid() -> int:
    """The id of a process that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_run_removes_staging_that_dead_runs_left_beside_its_out_dir(workspace):
    stale = workspace / "o" / f"{staging_prefix(workspace / 'o' / 'next', dead_pid())}abcd1234.tmp"
    live = workspace / "o" / f"{staging_prefix(workspace / 'o' / 'next', os.getpid())}efgh5678.tmp"
    other = workspace / "o" / f"{staging_prefix(workspace / 'o' / 'chain', dead_pid())}ijkl9012.tmp"
    for staging in (stale, live, other):
        (staging / "dev").mkdir(parents=True)
        (staging / "dev" / "1best.txt").write_text("half written\n")
    result = rescorer_cli(workspace, *RUN, *SUBSET, "data.sets.dev.nbest=dev", "data.sets.dev.refs=dev/ref.trn",
                          "out_dir=o/next", "engine.store=s.sqlite")
    assert result.returncode == 0, result.stderr
    assert not stale.exists()
    assert live.exists() and other.exists()  # a live writer's, and another out_dir's
    assert (workspace / "o" / "next" / "report.json").is_file()


def test_a_file_write_removes_a_dead_writers_staging_file(tmp_path):
    stale = tmp_path / f"{staging_prefix(tmp_path / 'notes.txt', dead_pid())}abcd1234.tmp"
    stale.write_text("half")
    write_text(tmp_path / "notes.txt", "done\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_sigterm_prints_the_interrupt_line_and_exits_143(tmp_path):
    """The run blocks in a data config that reads stdin (which the test holds open) after printing a line."""
    (tmp_path / "conf" / "data").mkdir(parents=True)
    (tmp_path / "conf" / "data" / "waiting.yaml").write_text('_target_: builtins.input\n_args_: ["waiting\\n"]\n')
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([*RESCORER, f"--config-dir={tmp_path / 'conf'}", "data=waiting", "task=evaluate",
                             f"out_dir={tmp_path / 'out'}"], cwd=tmp_path, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stdout:
            if line.strip() == "waiting":
                break
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 143, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rescorer: interrupted:") and "resume" in lines[0], stderr


STAGING_THEN_WAIT = """
import sys
from rescorer.cli import exit_on_interrupt
from rescorer.files import atomic_dir
exit_on_interrupt()
with atomic_dir(sys.argv[1]) as tmp:
    (tmp / "part.txt").write_text("half")
    print(tmp, flush=True)
    sys.stdin.readline()
"""


@pytest.mark.parametrize("signum, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_an_interrupted_write_removes_its_own_staging(tmp_path, signum, status):
    proc = subprocess.Popen([sys.executable, "-c", STAGING_THEN_WAIT, str(tmp_path / "out")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        staging = Path(proc.stdout.readline().strip())
        assert (staging / "part.txt").is_file()
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == status and stderr.startswith("rescorer: interrupted"), stderr
    assert list(tmp_path.iterdir()) == []


def test_a_failed_block_leaves_no_staging(tmp_path):
    with pytest.raises(RuntimeError), atomic_dir(tmp_path / "out") as tmp:
        (tmp / "x").write_text("half")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- set names
@pytest.mark.parametrize("name", ["../../x/victim", "/ABSOLUTE/victim", ".hidden", "a/b"])
def test_a_set_name_that_is_not_a_plain_name_is_refused_and_nothing_is_written(workspace, name):
    (workspace / "x").mkdir()
    shutil.copy(workspace / "o" / "chain" / "dev.jsonl", workspace / "x" / "victim.jsonl")
    name = name.replace("/ABSOLUTE", str(workspace / "x"))
    conf = workspace / "conf" / "data"
    conf.mkdir(parents=True)
    sets = {name: {"nbest": str(workspace / "x" / "victim.jsonl")}}
    (conf / "named.yaml").write_text(json.dumps({"_target_": "rescorer.io.sets.Corpus", "name": "named", "sets": sets}))
    stderr = assert_refused_leaving_all_as_it_was(
        workspace, f"--config-dir={workspace / 'conf'}", *[o for o in RUN if o != "data=own"], "data=named",
        "out_dir=o/new/run", "engine.store=s.sqlite", expected=(repr(name), "not a plain name", "letters, digits"))
    assert "Traceback" not in stderr
    assert not (workspace / "o" / "new").exists()


def test_the_python_api_refuses_a_set_name_that_is_a_path_before_writing(workspace):
    victim = workspace / "o" / "chain" / "dev.jsonl"
    before = checksums(workspace)
    with pytest.raises(ConfigError, match=r"set name '/.*/chain/dev' is not a plain name"):
        rescorer.rescore(dev=str(victim), sets={str(victim.with_suffix("")): str(victim)},
                         columns={"ctc": {"range": [0, 1], "step": 0.5}}, bootstrap=20, out_dir=workspace / "api")
    assert checksums(workspace) == before


def test_run_dir_paths_outside_the_staging_directory_are_refused(tmp_path):
    out = RunDir(tmp_path / ".out.tmp", tmp_path / "out")
    (tmp_path / ".out.tmp").mkdir()
    assert out.path("dev", "1best.txt") == tmp_path / ".out.tmp" / "dev" / "1best.txt"
    for parts in (("..", "victim"), ("/etc/passwd",), ("dev", "..", "..", "x"), ("dev", "..")):
        with pytest.raises(ConfigError, match="outside out_dir"):
            out.path(*parts)


# ---------------------------------------------------------------- an out_dir holding the run's inputs
HOLDS_INPUTS = {
    "reads a list in it": (["data.sets.dev.nbest=o/chain/dev.jsonl", "out_dir=o/chain"],
                           ("out_dir=o/chain holds o/chain/dev.jsonl",)),
    "is the list's directory": (["data.sets.dev.nbest=dev", "data.sets.dev.refs=dev/ref.trn", "out_dir=dev"],
                                ("out_dir=dev is dev",)),
    "is inside the list's directory": (["data.sets.dev.nbest=dev", "out_dir=dev/out"], ("out_dir=dev/out is inside dev",)),
    "reads references in it": (["data.sets.dev.nbest=dev", "data.sets.dev.refs=o/chain/ref.trn", "out_dir=o/chain"],
                               ("out_dir=o/chain holds o/chain/ref.trn",)),
    "holds the score store": (["data.sets.dev.nbest=dev", "data.sets.dev.refs=dev/ref.trn", "out_dir=o/chain",
                               "engine.store=o/chain/cache/s.sqlite"], ("out_dir=o/chain holds o/chain/cache/s.sqlite",)),
    "is a link to a directory holding a list": (["data.sets.dev.nbest=o/chain/dev.jsonl", "out_dir=link"],
                                                ("out_dir=link holds o/chain/dev.jsonl",)),
}


@pytest.mark.parametrize("case", sorted(HOLDS_INPUTS))
def test_an_out_dir_holding_the_runs_inputs_is_refused(workspace, case):
    overrides, expected = HOLDS_INPUTS[case]
    (workspace / "link").symlink_to("o/chain")
    assert_refused_leaving_all_as_it_was(workspace, *RUN, *SUBSET, "engine.store=s.sqlite", *overrides,
                                         expected=(*expected, "which this run reads"))


def test_apply_refuses_an_out_dir_holding_its_tuned_rescorer(workspace):
    assert_refused_leaving_all_as_it_was(
        workspace, "task=apply", "data=own", "task.tuned=o/chain/tuned.yaml", "data.sets.test.nbest=dev",
        "out_dir=o/chain", "engine.store=s.sqlite", expected=("out_dir=o/chain holds o/chain/tuned.yaml",))


def test_the_python_api_refuses_an_out_dir_holding_its_dev_set(workspace):
    before = checksums(workspace)
    with pytest.raises(ConfigError, match=r"out_dir=.*chain holds .*dev\.jsonl"):
        rescorer.rescore(dev=str(workspace / "o" / "chain" / "dev.jsonl"), columns={"ctc": {"range": [0, 1], "step": 0.5}},
                         bootstrap=20, out_dir=workspace / "o" / "chain")
    assert checksums(workspace) == before


def test_a_key_too_long_for_a_file_name_is_one_line(workspace):
    assert_refused_leaving_all_as_it_was(workspace, *RUN, f"+data.sets.{'x' * 250}.nbest=dev", "out_dir=o/new",
                                         expected=("the key data.sets.xxx", "is too long"))


def test_an_input_name_too_long_to_stage_is_named_and_out_dir_is_not_blamed(workspace):
    long = workspace / ("z" * 245 + ".jsonl")
    shutil.copy(workspace / "o" / "chain" / "dev.jsonl", long)
    says = assert_refused_leaving_all_as_it_was(
        workspace, "task=apply", "data=own", "task.tuned=o/chain/tuned.yaml", f"data.sets.test.nbest={long.name}",
        "out_dir=o/new", "engine.store=s.sqlite", expected=("the file name is too long", "zzzz"))
    assert "cannot write there" not in says


def test_a_closed_standard_output_ends_an_in_memory_apply_quietly_with_its_outputs_in_place(workspace):
    read, write = os.pipe()
    os.close(read)  # the reader has gone before the table: every write to standard output fails
    try:
        done = subprocess.run([*RESCORER, "task=apply", "data=own", "task.tuned=o/chain/tuned.yaml",
                               "data.sets.test.nbest=dev", "data.sets.test.every=15", "data.sets.test.top=5",
                               "out_dir=o/new", "engine.store=s.sqlite", "engine.progress=false"], cwd=workspace, stdout=write, stderr=subprocess.PIPE,
                              text=True, timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    finally:
        os.close(write)
    assert done.returncode == 141 and done.stderr == "", done.stderr
    out = workspace / "o" / "new"
    assert json.loads((out / "report.json").read_text())["sets"]["test"]["utterances"] > 0
    assert (out / "test.jsonl").is_file() and (out / "report.md").is_file()
    assert not [p for p in workspace.joinpath("o").iterdir() if p.name.startswith(".")]  # no staging left


# ---------------------------------------------------------------- what a run reads, named in its errors
def test_a_symlink_loop_as_the_n_best_is_one_line_naming_it(workspace):
    (workspace / "loop").symlink_to("loop")
    assert_refused_leaving_all_as_it_was(workspace, *RUN, "data.sets.dev.nbest=loop", "out_dir=o/new",
                                         "engine.store=s.sqlite", expected=("loop: symbolic link loop",))


def test_an_id_with_whitespace_names_the_input_line_and_the_final_output(workspace):
    rows = (workspace / "o" / "chain" / "dev.jsonl").read_text().splitlines()
    record = json.loads(rows[3])
    record["id"] = record["id"].replace("-", " ", 1)
    rows[3] = json.dumps(record)
    (workspace / "spaced.jsonl").write_text("\n".join(rows) + "\n")
    stderr = assert_refused_leaving_all_as_it_was(
        workspace, *RUN, "data.sets.dev.nbest=spaced.jsonl", "out_dir=o/chain2", "engine.store=s.sqlite",
        expected=("spaced.jsonl:4: utterance id contains whitespace", "o/chain2/dev/1best.txt", repr(record["id"])))
    assert ".tmp" not in stderr


@pytest.mark.parametrize("fixture, named, fmt", [("fairseq/generate-test.v0.9.txt", "generate-1best.txt", "fairseq"),
                                                 ("jsonl/nbest.jsonl", "1best.txt", "jsonl"),
                                                 ("jsonl/nbest.jsonl", "text", "jsonl")])
def test_an_input_named_like_an_output_keeps_its_re_ranked_copy(fixture, named, fmt, tmp_path):
    """The re-ranked list and the 1-best files are different files whatever the input is called, and report.json
    names each file for what it holds."""
    source = tmp_path / "in" / named
    source.parent.mkdir()
    text = (ROOT / "tests" / "fixtures" / "formats" / fixture).read_text()
    if fmt == "jsonl":  # every utterance needs its reference to tune on
        records = [json.loads(line) for line in text.splitlines()]
        text = "".join(json.dumps({**r, "ref": r["ref"] or r["hyps"][0]["text"]}) + "\n" for r in records)
    source.write_text(text)
    base = {"fairseq": "score", "jsonl": "am"}[fmt]
    result = rescorer.rescore(sets={"dev": {"nbest": str(source), "fmt": fmt}}, base=base, columns={},
                              out_dir=tmp_path / "out", bootstrap=10)
    outputs = json.loads((tmp_path / "out" / "report.json").read_text())["sets"]["dev"]["outputs"]
    native = Path(outputs["native"])
    assert native.name == f"nbest-{named}" and native.parent == tmp_path / "out" / "dev"
    rewritten = read_nbest(native, fmt=fmt)
    assert [len(u.hyps) for u in rewritten] == [len(u.hyps) for u in result.nbests["dev"]]
    lines = (tmp_path / "out" / "dev" / "1best.txt").read_text().splitlines()  # `id text` (ASR) or `text` (MT)
    best = [u.hyps[0].text for u in result.nbests["dev"]]
    assert len(lines) == len(best) and all(line.endswith(text) for line, text in zip(lines, best))


@pytest.mark.parametrize("names, says", [
    (["a", "a.jsonl"], "set 'a.jsonl' would write a.jsonl in out_dir, where set 'a' writes too"),
    (["report.json"], "set 'report.json' would write report.json in out_dir, where the run itself writes too"),
    (["tuned.yaml"], "where the run itself writes too"),
    (["weights_dev.png"], "where the run's weight plots writes too"),
    (["report"], "set 'report' would write report.jsonl"),
    (["x" * 180], "is 180 characters, too long for the file names of its outputs in out_dir (at most 179)"),
])
def test_sets_whose_outputs_would_collide_are_refused_before_any_work(names, says, tmp_path):
    sets = {name: {"nbest": str(DEMO / "dev_other"), "refs": str(DEMO / "dev_other" / "ref.trn"), "every": 100}
            for name in names}
    if "report" in names:  # report.jsonl is free, so this one runs: no collision where there is none
        rescorer.rescore(sets=sets, dev="report", columns={}, out_dir=tmp_path / "ok", bootstrap=10)
        return
    with pytest.raises(ConfigError, match=re.escape(says)):
        rescorer.rescore(sets=sets, columns={}, out_dir=tmp_path / "out", bootstrap=10)
    assert not (tmp_path / "out").exists()
