"""Issue 16: hostile inputs and conversions. Each ``test_issue16_<n>_…`` pins defect #n of the issue."""
from __future__ import annotations

import math
import os
import re
import stat
from contextlib import contextmanager
from pathlib import Path

import pytest

import rescorer
from rescorer import Hypothesis, NBest, NBestFormatError, Utterance, read_nbest, write_nbest
from rescorer.combine import Column, Features
from rescorer.errors import ConfigError
from rescorer.io import FORMATS

from .test_formats import FIXTURES, read, write_and_read

ESPNET2 = "espnet2/decode_asr_lm/dev_clean"


def lines(*rows: str) -> str:
    return "".join(f"{row}\n" for row in rows)


def one_line(err: Exception) -> str:
    message = str(err)
    assert "\n" not in message, message
    return message


# ---------------------------------------------------------------- #16 output modes follow the umask
@contextmanager
def umask(mask: int):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("mask, file_mode, dir_mode", [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700)])
def test_issue16_16_outputs_honour_the_umask(tmp_path, mask, file_mode, dir_mode):
    from rescorer.io.common import current_umask, write_text

    nbest = read(ESPNET2)
    with umask(mask):
        assert current_umask() == mask
        write_text(tmp_path / "plain.txt", "x\n")
        write_nbest(nbest, tmp_path / "nbest.jsonl", "jsonl")
        write_nbest(nbest, tmp_path / "decode", "espnet2")
        assert os.umask(mask) == mask  # reading it left it alone
    assert mode(tmp_path / "plain.txt") == mode(tmp_path / "nbest.jsonl") == file_mode
    assert mode(tmp_path / "decode") == dir_mode
    assert mode(tmp_path / "decode" / "1best_recog" / "text") == file_mode


def test_issue16_16_failed_write_leaves_nothing(tmp_path):
    from rescorer.io.common import atomic_file

    with pytest.raises(RuntimeError), atomic_file(tmp_path / "out.txt") as tmp:
        tmp.write_text("half")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []
    assert rescorer.NBestFormatError is NBestFormatError
