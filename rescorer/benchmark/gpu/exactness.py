"""Stage 1: every scorer on the GPU in fp32 against the CPU, per token (≤ 1e-4); how far bf16 moves the scores;
and a provoked out-of-memory error that the engine backs off from (smaller batches, the same scores)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ...context import Context, scored_texts
from ...paths import DEMO
from .models import model
from .plan import Plan
from .record import Record

TOLERANCE = 1e-4
CASES: dict[str, tuple[str, str, dict[str, Any]]] = {  # name → (model role, scorer kind, options)
    **{f"pll {v}": ("masked", "pll", {"variant": v}) for v in ("original", "word_l2r", "whole_word", "sentence_l2r")},
    "pll, context 2": ("masked", "pll", {"variant": "word_l2r", "context": {"utterances": 2}}),
    "ll": ("causal", "ll", {"share_prefixes": False}),
    "ll, shared prefixes": ("causal", "ll", {"share_prefixes": True}),
    "ll, context 3, shared prefixes": ("causal", "ll", {"share_prefixes": True, "context": {"utterances": 3}}),
    "ll 1b-shaped, shared prefixes": ("llama", "ll", {"share_prefixes": True}),
    "student": ("student", "student", {}),
}
KEYS = ("tolerance", "models", *CASES, "oom", "passed")


def run(out: Path, plan: Plan, seconds: float, cache: Path) -> None:
    record = Record(out / "exactness.json", "exactness", KEYS, seconds, plan)
    record.data["tolerance"] = TOLERANCE
    models = record.figure("models", lambda: {role: model(role, plan.sizes[role], cache)[1]
                                              for role in ("masked", "causal", "llama", "student")})
    if "path" in models.get("masked", {}):  # first: it is quick, and a short cap must not drop it
        record.figure("oom", lambda: provoked_oom(Path(models["masked"]["path"]), plan), needs=5)
    for name in sorted(CASES, key=lambda case: CASES[case][0] == "llama"):  # the largest model last
        role, kind, options = CASES[name]
        path = Path(models[role]["path"]) if "path" in models.get(role, {}) else None
        record.figure(name, lambda: compared(kind, path, options, plan), needs=5)
    cases = [record.data[name] for name in CASES]
    record.data["passed"] = all(isinstance(c, dict) and c.get("passed") for c in cases)
    record.finish()


def case_texts(plan: Plan, context: Context | None, normalise: Any) -> list[str]:
    """The top 10 hypotheses of the excerpt's first utterances (``plan.exact_texts`` of them), as a scorer with
    ``context`` reads them (after the 1-bests of the utterances before)."""
    from ...io import read_nbest

    nbest = read_nbest(DEMO / "dev_other")
    keep, count = [], 0
    for utterance in nbest:
        hyps = utterance.hyps[:10]
        keep.append(type(utterance)(id=utterance.id, hyps=hyps, ref=utterance.ref))
        count += len(hyps)
        if count >= plan.exact_texts:
            break
    return scored_texts(nbest.with_utterances(keep), context, normalise)[: plan.exact_texts]


def loaded(kind: str, path: Path, options: dict[str, Any], device: str, dtype: str, plan: Plan,
           **engine: Any) -> Any:
    from ...engine import load_scorer

    return load_scorer(kind, str(path), device=device, dtype=dtype, store=None, progress=False,
                       threads=plan.threads, **engine, **options)


def token_scores(scorer: Any, texts: Sequence[str]) -> tuple[np.ndarray, Any]:
    """Every per-token score of ``texts`` (as given: already normalised) in one array, and the engine's stats;
    the scorer's memory is given back."""
    import torch

    scored = scorer.engine.score(scorer.adapter, texts, False, scorer.name)
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return np.concatenate([np.asarray(t, dtype=np.float64) for t in scored.tokens]), scored.stats


def compared(kind: str, path: Path | None, options: dict[str, Any], plan: Plan) -> dict[str, Any]:
    """One scorer: fp32 on the plan's device against fp32 on the CPU, and bf16 against fp32 on the device."""
    if path is None:
        raise RuntimeError("its model could not be built (see models)")
    reference = loaded(kind, path, options, "cpu", "fp32", plan)
    texts = case_texts(plan, Context.of(options.get("context")), reference.normaliser)
    cpu, _ = token_scores(reference, texts)
    del reference
    device, _ = token_scores(loaded(kind, path, options, plan.device, "fp32", plan), texts)
    half, _ = token_scores(loaded(kind, path, options, plan.device, "bf16", plan), texts)
    if cpu.shape != device.shape or device.shape != half.shape:
        raise RuntimeError(f"token counts differ: cpu {cpu.shape}, {plan.device} {device.shape}, bf16 {half.shape}")
    gap, drift = np.abs(device - cpu), np.abs(half - device)
    return {"texts": len(texts), "tokens": int(cpu.size), "max_abs_diff": float(gap.max(initial=0.0)),
            "passed": bool(gap.max(initial=0.0) <= TOLERANCE and np.isfinite(device).all()),
            "bf16_max_abs_diff": float(drift.max(initial=0.0)), "bf16_mean_abs_diff": float(drift.mean())}


def provoked_oom(path: Path, plan: Plan) -> dict[str, Any]:
    """PLL with a budget far over what memory holds: on a GPU the process may use only what the model takes plus
    64 MiB; on a CPU (rehearsal) the model raises torch's out-of-memory error for batches over 200 tokens. The engine
    must halve its budget until batches fit, and give the scores of an ordinary run."""
    import torch

    options = {"variant": "original"}
    scorer = loaded("pll", path, options, plan.device, "fp32", plan, budget=1 << 16)
    texts = case_texts(plan, None, scorer.normaliser)
    expected, _ = token_scores(loaded("pll", path, options, plan.device, "fp32", plan), texts)
    adapter, forward = scorer.adapter, scorer.adapter.forward
    if plan.device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        allowed = torch.cuda.memory_allocated() + (64 << 20)
        torch.cuda.set_per_process_memory_fraction(allowed / torch.cuda.get_device_properties(0).total_memory)
        how = f"memory capped at {allowed >> 20} MiB (the model + 64 MiB)"
    else:
        def limited(pool: Any, picked: Any) -> Any:
            if int(pool.length[picked].sum()) > 200:
                raise torch.OutOfMemoryError("out of memory (provoked: over 200 tokens in a batch)")
            return forward(pool, picked)
        adapter.forward = limited
        how = "simulated on the CPU: batches over 200 tokens raise torch's out-of-memory error"
    try:
        got, stats = token_scores(scorer, texts)
    finally:
        adapter.forward = forward
        if plan.device.startswith("cuda"):
            torch.cuda.set_per_process_memory_fraction(1.0)
    budgets = list(stats.budgets)
    return {"provoked": how, "first_budget": 1 << 16, "budgets": budgets, "backed_off": bool(budgets),
            "max_abs_diff": float(np.abs(got - expected).max(initial=0.0)),
            "passed": bool(budgets) and got.shape == expected.shape and float(np.abs(got - expected).max()) <= 1e-5}
