"""The host path alone (``rescorer task=bench task.kind=host``): the engine's batch loop with a null model.

The texts are prepared (tokenized) and pooled once, each timed on its own; then the engine's loop runs over the
pool as in a real run — batches cut from the length-sorted rows, each batch's arrays (ids, mask spans, targets)
gathered from the pool with NumPy and turned into tensors, the model's place taken by one that returns zeros of
the right shape, the scores scattered back and finished sentences read out — on one thread. Its rows/s is
what the host can feed a GPU; the goal is ≥ 1,000,000 rows/s for ~25-token rows at GPU budgets.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from ..log import info
from ..engine.local import EngineStats, run_pool
from ..scorers.causal import CausalLMScorer
from ..scorers.masked import MaskedLMScorer
from .common import bench_model, bench_texts, best_time, save, stamp

GOAL = 1_000_000  # rows/s on one core


class NullMaskedLM(MaskedLMScorer):
    """PLL rows as usual, scored by a model that returns zeros (benchmark only)."""

    def log_probs(self, ids: np.ndarray, valid: Any, target: np.ndarray, target_ids: np.ndarray) -> Any:
        import torch

        for array in (ids, target, target_ids) if valid is None else (ids, valid, target, target_ids):
            self.to_device(array)
        return torch.zeros(len(ids), 1)


class NullCausalLM(CausalLMScorer):
    """LL rows as usual, scored by a model that returns zeros (benchmark only)."""

    def log_probs(self, input_ids: Any, attention: Any, skip: np.ndarray) -> Any:
        import torch

        return torch.zeros(input_ids.shape[0], input_ids.shape[1] - 1)


def loop_rate(scorer: Any, texts: list[str], repeats: int) -> dict[str, Any]:
    """Preparation, pooling and the engine loop at the scorer's GPU and CPU budgets, timed apart."""
    start = time.perf_counter()
    sentences = scorer.prepare_all(texts)
    prepared = time.perf_counter() - start
    start = time.perf_counter()
    pool = scorer.pool(sentences)
    pooled = time.perf_counter() - start
    rates = {}
    for budget in (scorer.gpu_budget, scorer.default_budget):
        seconds = best_time(lambda: [None for _ in run_pool(scorer, pool, texts, budget, EngineStats(), False)], repeats)
        rates[str(budget)] = pool.rows / seconds
    return {"rows": pool.rows, "tokens_per_row": float(pool.length.mean()), "prepare_texts_per_s": len(texts) / prepared,
            "pool_seconds": pooled, "rows_per_s": rates}


def bench_host(n: int = 20000, repeats: int = 3, cache: str | Path = "exp/bench/models",
               out_dir: str | Path = "exp/bench") -> dict[str, Any]:
    """Rows/s of the engine's loop with null models on ``n`` real hypotheses, one thread: PLL (``original`` and
    the default ``word_l2r``, BERT's WordPiece) and LL (GPT-2 BPE)."""
    import torch

    torch.set_num_threads(1)
    texts, source = bench_texts(n)
    bert, gpt2 = (bench_model(arch, "tiny", Path(cache)) for arch in ("bert", "gpt2"))
    scorers = {"pll original": NullMaskedLM(str(bert), variant="original", device="cpu"),
               "pll word_l2r": NullMaskedLM(str(bert), variant="word_l2r", device="cpu"),
               "ll": NullCausalLM(str(gpt2), device="cpu")}
    result = stamp(kind="host", hypotheses=len(texts), source=source, threads=1, device="cpu (null model)",
                   goal_rows_per_s=GOAL, tflops=None, mfu=None, mfu_note="n/a (null model)",
                   scorers={name: loop_rate(scorer, texts, repeats) for name, scorer in scorers.items()})
    for name, run in result["scorers"].items():
        rates = ", ".join(f"{rate:,.0f} rows/s at budget {budget}" for budget, rate in run["rows_per_s"].items())
        info(f"host {name}: {run['rows']:,} rows of {run['tokens_per_row']:.1f} tokens: {rates}; "
              f"prepare {run['prepare_texts_per_s']:,.0f} texts/s, pool {run['pool_seconds']:.2f} s")
    info(f"one thread, {len(texts)} hypotheses, null model (TFLOP/s, MFU: n/a); goal ≥ {GOAL:,} rows/s")
    return save(result, out_dir, "bench_host.json")
