"""Stage 2: hypotheses per second and MFU against the bf16 matrix peak measured here, for BERT-base-sized PLL,
GPT-2-small-sized and 1B Llama-shaped LL (with and without shared prefixes) and the student, with minicons on the
same model and texts at its best batch size; where a target is missed, a profile says whether the GPU or the host
held the time."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from ..common import best_time
from ..flops import peak_of, rate, work
from ..peers import peer_times
from .models import excerpt_texts, model
from .plan import Plan
from .record import Record

TARGETS = {"pll_mfu": 0.40, "ll_mfu": 0.25, "vs_minicons": 2.0}
FIGURES: dict[str, tuple[str, str, dict[str, Any], str | None]] = {  # name → (role, kind, options, MFU target)
    "pll": ("masked", "pll", {"variant": "original"}, "pll_mfu"),
    "ll_gpt2": ("causal", "ll", {"share_prefixes": False}, "ll_mfu"),
    "ll_gpt2_shared": ("causal", "ll", {"share_prefixes": True}, "ll_mfu"),
    "ll_1b": ("llama", "ll", {"share_prefixes": False}, "ll_mfu"),
    "ll_1b_shared": ("llama", "ll", {"share_prefixes": True}, "ll_mfu"),
    "student": ("student", "student", {}, None),
}
PEERS = {"pll_minicons": ("masked", "pll", "pll"), "ll_gpt2_minicons": ("causal", "ll", "ll_gpt2")}
KEYS = ("targets", "texts", "models", "peak", *FIGURES, *PEERS)


def run(out: Path, plan: Plan, seconds: float, cache: Path) -> None:
    record = Record(out / "speed.json", "speed", KEYS, seconds, plan)
    record.data["targets"] = TARGETS
    texts = excerpt_texts(plan.texts)
    record.data["texts"] = {"hypotheses": len(texts), "source": "the shipped LibriSpeech excerpt, in list order",
                            "words_mean": sum(len(t.split()) for t in texts) / max(1, len(texts))}
    peak = record.figure("peak", lambda: measured_peak(plan))
    paths: dict[str, Path] = {}
    for name, (role, kind, options, target) in FIGURES.items():
        def measure() -> dict[str, Any]:
            if role not in paths:
                paths[role], built = model(role, plan.sizes[role], cache)
                record.data["models"] = {**(record.data["models"] or {}), role: built}
            figure = throughput(kind, paths[role], options, texts, plan, peak, TARGETS.get(target or ""))
            return {"model": named(record.data["models"][role]), **figure}
        record.figure(name, measure, needs=10)
    for name, (role, kind, ours) in PEERS.items():
        if role in paths:
            record.figure(name, lambda: peer(kind, paths[role], texts[: plan.peer_texts], plan, record.data[ours]),
                          needs=20)
    record.finish()


def named(built: dict[str, Any]) -> str:
    """A model as the table names it: ``gpt2 base, 124M parameters``."""
    return f"{built['arch']} {built['size']}, {built['parameters'] / 1e6:,.0f}M parameters"


def measured_peak(plan: Plan) -> dict[str, Any]:
    """The dense matrix-product rate of this device, measured: bf16 on a GPU, fp32 on a CPU (random inputs)."""
    import torch

    cuda = plan.device.startswith("cuda")
    dtype, name = (torch.bfloat16, "bf16") if cuda else (torch.float32, "fp32")
    side, repeats = plan.matmul, 10
    a, b = (torch.randn(side, side, device=plan.device, dtype=dtype) for _ in range(2))
    synchronise = torch.cuda.synchronize if cuda else (lambda: None)
    for _ in range(3):
        a @ b
    synchronise()
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    synchronise()
    seconds = time.perf_counter() - start
    flops = 2.0 * side**3 * repeats / seconds
    sheet, note = peak_of(torch.cuda.get_device_name(0), name) if cuda else (None, "n/a (CPU)")
    return {"dtype": name, "side": side, "flops": flops, "tflops": flops / 1e12,
            "datasheet_tflops": sheet / 1e12 if sheet else None, "datasheet_note": note}


def throughput(kind: str, path: Path, options: dict[str, Any], texts: list[str], plan: Plan, peak: dict[str, Any],
               target: float | None) -> dict[str, Any]:
    """Our engine on ``texts`` (no store, the device's default dtype), best of the plan's repeats after a warm-up;
    MFU against the measured peak, and a profile when the MFU misses ``target``."""
    from ...engine import load_scorer

    scorer = load_scorer(kind, str(path), device=plan.device, store=None, progress=False, threads=plan.threads,
                         **options)
    scorer.score(texts[:32])
    seconds = best_time(lambda: scorer.score(texts), plan.repeats)
    cost = work(scorer, texts)
    peak_flops = peak.get("flops") if isinstance(peak, dict) else None
    figure = {"hypotheses": len(texts), "seconds": seconds, "hyps_per_s": len(texts) / seconds, "rows": cost["rows"],
              "tokens": cost["tokens"], "dtype": str(scorer.adapter.dtype).removeprefix("torch."),
              "budget": scorer.engine.budget or scorer.adapter.preferred_budget(),
              **rate(cost["flops"], seconds, peak_flops, "" if peak_flops else "no measured peak")}
    if target is not None:
        figure["target_mfu"] = target
        figure["reached"] = None if figure["mfu"] is None else figure["mfu"] >= target
        if not figure["reached"]:
            profile_texts = texts[: 8 if plan.rehearsal else 1000]  # the rehearsal only checks that it works
            figure["profile"] = profiled(lambda: scorer.score(profile_texts), plan.device)
    return figure


def peer(kind: str, path: Path, texts: list[str], plan: Plan, ours: Any) -> dict[str, Any]:
    """minicons on the same model and texts at each batch size; its best against our time on those texts."""
    from ...engine import load_scorer

    times = peer_times(kind, path, texts, plan.device, plan.batches, ("minicons",), 1)
    ranked = {k: v for k, v in times.items() if isinstance(v, float)}
    if not ranked:
        return {"batches": times, "note": "minicons is not installed"}
    best = min(ranked, key=ranked.get)
    options = FIGURES["pll" if kind == "pll" else "ll_gpt2"][2]
    scorer = load_scorer(kind, str(path), device=plan.device, store=None, progress=False, threads=plan.threads,
                         **options)
    scorer.score(texts[:32])
    mine = best_time(lambda: scorer.score(texts), plan.repeats)
    speedup = ranked[best] / mine
    return {"hypotheses": len(texts), "batches": times, "best": best, "seconds": ranked[best],
            "hyps_per_s": len(texts) / ranked[best], "rescorer_seconds": mine, "speedup": speedup,
            "target": TARGETS["vs_minicons"], "reached": speedup >= TARGETS["vs_minicons"]}


def profiled(call: Callable[[], Any], device: str) -> dict[str, Any]:
    """Where one call's time goes: the device's kernel time against the wall time (the rest is the host), and
    the five costliest operations."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    cuda = device.startswith("cuda")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        start = time.perf_counter()
        call()
        if cuda:
            torch.cuda.synchronize()
        wall = time.perf_counter() - start
    events = prof.key_averages()
    own = (lambda e: getattr(e, "self_device_time_total", 0.0)) if cuda else (lambda e: e.self_cpu_time_total)
    kernel = sum(own(e) for e in events) / 1e6 if cuda else None
    top = sorted(events, key=own, reverse=True)[:5]
    return {"wall_s": wall, "kernel_s": kernel, "kernel_share": kernel / wall if kernel is not None else None,
            "held_by": None if kernel is None else ("the GPU (kernels)" if kernel / wall > 0.8 else "the host"),
            "top": [{"op": e.key, "seconds": own(e) / 1e6} for e in top]}
