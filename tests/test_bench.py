"""Benchmark plumbing: the null-model host loop covers every row, TFLOP/s and MFU (n/a on a CPU), the dense
peak of the right GPU and dtype, and the per-token |bf16 − fp32| on a CPU."""
from __future__ import annotations

import numpy as np
import pytest

from rescorer import load_scorer
from rescorer.benchmark.flops import peak_of, rate, shown, work
from rescorer.benchmark.host import NullCausalLM, NullMaskedLM
from rescorer.benchmark.precision import bf16_error
from rescorer.engine.local import EngineStats, run_pool

from .test_scorers import LONG, TEXTS


@pytest.mark.parametrize("gpu, dtype, peak", [("NVIDIA H100 80GB HBM3", "bf16", 989e12), ("NVIDIA H100 PCIe", "fp32", 51e12),
                                              ("NVIDIA A100-SXM4-80GB", "bf16", 312e12), ("NVIDIA A10", "fp16", 125e12),
                                              ("NVIDIA L40S", "bf16", 362e12), ("NVIDIA L4", "fp32", 30.3e12)])
def test_the_peak_is_the_most_specific_gpu_name_in_the_dtype(gpu, dtype, peak):
    assert peak_of(gpu, dtype) == (peak, "")


def test_mfu_is_n_a_where_there_is_no_peak():
    assert peak_of("Tesla T4", "bf16") == (None, "n/a (T4 has no bf16 peak)")
    assert peak_of("NVIDIA A10G", "bf16")[0] is None  # not taken for an A10
    cpu = rate(2e12, 2.0, None, "n/a (CPU)")
    assert cpu["tflops"] == 1.0 and cpu["mfu"] is None and shown(cpu) == ("1", "n/a (CPU)")
    assert shown(rate(5e14, 1.0, 1e15, "")) == ("500", "50.0%")


@pytest.mark.parametrize("kind", ["pll", "ll"])
def test_the_null_model_loop_scores_every_row_of_every_text(tiny_models, kind):
    """The host benchmark's loop: every text comes back with as many (zero) scores as the real scorer gives."""
    texts = [*TEXTS, LONG]
    real = load_scorer(kind, str(tiny_models["bert" if kind == "pll" else "gpt2"]), window=16, progress=False)
    null = (NullMaskedLM(str(tiny_models["bert"]), device="cpu", window=16) if kind == "pll"
            else NullCausalLM(str(tiny_models["gpt2"]), device="cpu", window=16))
    pool = null.pool(null.prepare_all(texts))
    stats, scores = EngineStats(), {}
    for chunk in run_pool(null, pool, texts, 64, stats, progress=False, flush_seconds=0.0):
        scores.update(chunk)
    assert stats.rows == stats.rows_computed == pool.rows and len(stats.budgets) == 0
    for text, tokens in zip(texts, real.token_scores(texts)):
        assert scores[text][1] == [0.0] * len(tokens)
        assert scores[text][0] == (0.0 if tokens else null.empty_score)


def test_work_counts_the_rows_the_engine_runs(tiny_models):
    scorer = load_scorer("pll", str(tiny_models["bert"]), progress=False)
    cost = work(scorer, TEXTS)
    assert cost["rows"] == scorer.compute(TEXTS).stats.rows == cost["tokens"] and cost["flops"] > 0


def test_bf16_moves_per_token_scores_a_little_on_a_cpu(tiny_models):
    error = bf16_error("pll", tiny_models["bert"], TEXTS, {"device": "cpu"}, {"variant": "original"}, 3)
    assert error["texts"] == 3 and error["tokens"] > 10
    assert 0 < error["mean"] <= error["max"] < 1 and np.isfinite(error["max"])
    assert bf16_error("pll", tiny_models["bert"], TEXTS, {"device": "cpu"}, {}, 0)["note"].startswith("n/a")
