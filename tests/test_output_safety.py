"""Inputs that cannot be read safely (pipes, symlink loops) are one line naming the file. Refusals from the command
line are checked as a user sees them: exit 2, one ``rescorer: error:`` line, no traceback, every file as it was."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from rescorer.errors import NBestFormatError
from rescorer.io import read_nbest

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
