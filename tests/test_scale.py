"""Scoring beyond one process (engine=ray, engine=multi_gpu) gives the local engine's scores, and resumes.

Batches are composed differently across workers (other padding, other summation order), so scores agree to
float32 rounding: every token's log-prob within 1e-4 of the local engine's. A log-softmax over 30k logits of size
~20 carries a few units in the last place of 20 (2e-6 each); 1e-5 is exceeded by a hair on some machines.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from rescorer import load_scorer
from rescorer.engine.scale import ScaleConfig, shard_of
from rescorer.errors import ConfigError
from rescorer.shipped import shipped_model
from rescorer.store import ScoreStore

from .conftest import RAY_ENV, needs_minilm
from .models import demo_texts

# 10 real LibriSpeech dev_other utterances × their 6 best hypotheses, scored with the shipped MLM's PLL
SUBSET = ["task=score", "data=demo", "data.sets.test_clean=null", "++data.sets.dev_other.every=20",
          "++data.sets.dev_other.top=6", "scorer=[pll]", "engine.progress=false"]


FLOAT32_NATS = 1e-4


def assert_same_scores(local: dict, other: dict) -> None:
    assert local.keys() == other.keys()
    for text, (total, tokens) in local.items():
        other_total, other_tokens = other[text]
        assert len(tokens) == len(other_tokens)
        assert np.max(np.abs(np.subtract(tokens, other_tokens)), initial=0) <= FLOAT32_NATS, text
        assert abs(total - other_total) <= FLOAT32_NATS * max(1, len(tokens)), text


def stored(path: Path) -> dict:
    with ScoreStore(path) as store:
        (signature,) = store.signatures()
        texts = [row[0] for row in store.db.execute("SELECT text FROM scores")]
        return store.get(signature, texts)


def rescorer(tmp_path: Path, name: str, *overrides: str) -> list[str]:
    return [sys.executable, "-m", "rescorer.cli", *SUBSET, f"engine.store={tmp_path}/{name}.sqlite",
            f"out_dir={tmp_path}/{name}", *overrides]


def test_shards_are_stable_and_cover_every_shard():
    texts = demo_texts()
    shards = [shard_of(t, 3) for t in texts]
    assert shards == [shard_of(t, 3) for t in texts]
    assert set(shards) == {0, 1, 2}
    assert shard_of("I SAW THE MAN", 1) == 0


def test_a_misspelt_scale_option_is_named():
    with pytest.raises(ConfigError, match="unknown engine.scale key 'worker', did you mean 'workers'"):
        ScaleConfig.of({"backend": "ray", "worker": 2})
    with pytest.raises(ConfigError, match="backend must be one of ray, processes"):
        ScaleConfig.of({"backend": "dask"})


def test_a_worker_that_loads_other_files_than_the_driver_is_refused(tiny_causal, tmp_path):
    """The driver stores what workers score under its own signature: a worker whose model files differ from the
    driver's (another machine, another copy) stops before it scores anything."""
    import shutil

    import torch

    from rescorer.engine.scale import Worker
    from rescorer.errors import ScorerError

    model = shutil.copytree(tiny_causal, tmp_path / "model")
    driver = load_scorer("ll", str(model), store=None, progress=False)
    tag, threads = driver.adapter.model_tag, torch.get_num_threads()
    assert Worker(driver.spec, "cpu", threads, None, tag).scorer.signature == driver.signature
    config = model / "config.json"
    config.write_text(config.read_text().replace("{", '{"edited": true,', 1))
    with pytest.raises(ScorerError, match=f"a worker loaded other files for model .* \\(fingerprint \\w+ where the "
                                          f"driver's is {tag}\\)"):
        Worker(driver.spec, "cpu", threads, None, tag)


@pytest.mark.slow
@needs_minilm
def test_multi_gpu_engine_on_two_cpu_processes_scores_like_the_local_engine():
    texts = demo_texts()[:40]
    model = shipped_model("minilm_mlm")
    local = load_scorer("pll", model, variant="word_l2r")
    scaled = load_scorer("pll", model, variant="word_l2r", scale={"backend": "processes", "workers": 2},
                         progress=False)
    local_result, scaled_result = local.compute(texts), scaled.compute(texts)
    assert_same_scores(dict(zip(texts, local_result)), dict(zip(texts, scaled_result)))
    assert scaled_result.stats.rows_computed == local_result.stats.rows_computed > 0


@pytest.mark.xdist_group("ray")  # Ray is one per machine: its tests run one after another
@pytest.mark.slow
@needs_minilm
def test_ray_engine_scores_like_the_local_engine_and_resumes_after_the_driver_is_killed(tmp_path, ray_cluster):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", **RAY_ENV}
    ray = ["engine=ray", f"engine.scale.address={ray_cluster}", "engine.scale.workers=2", "engine.scale.block=4"]
    subprocess.run(rescorer(tmp_path, "local"), check=True, env=env, capture_output=True, timeout=900)
    expected = stored(tmp_path / "local.sqlite")

    driver = subprocess.Popen(rescorer(tmp_path, "ray", *ray), env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    store, deadline = tmp_path / "ray.sqlite", time.monotonic() + 900
    try:
        while not (store.exists() and ScoreStore(store).count()) and driver.poll() is None:
            assert time.monotonic() < deadline, "no block came back from the Ray actors"
            time.sleep(0.2)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
    kept = ScoreStore(store).count()
    assert 0 < kept < len(expected), "the driver was killed after some blocks and before the end"

    result = subprocess.run(rescorer(tmp_path, "ray", *ray), env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    column = {run: json.loads((tmp_path / run / "report.json").read_text())["sets"]["dev_other"]["scorers"]["pll"]
              for run in ("local", "ray")}
    assert column["ray"]["cached"] == kept and column["ray"]["texts"] == column["local"]["texts"]
    assert 0 < column["ray"]["rows"] < column["local"]["rows"]
    assert_same_scores(expected, stored(store))
