"""Staging of killed runs goes away, SIGTERM is one line, and inputs that cannot be read safely (pipes, symlink loops)
are one line naming the file. Refusals from the command line are checked
as a user sees them: exit 2, one ``rescorer: error:`` line, no traceback, every file as it was."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rescorer.errors import NBestFormatError
from rescorer.io import read_nbest
from rescorer.io.common import atomic_dir, staging_prefix, write_text

from .conftest import DEMO
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
        assert os.read(read_end, 20) == b'{"nbest": {"fmt": "e'
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
from rescorer.io.common import atomic_dir
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
