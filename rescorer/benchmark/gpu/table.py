"""The one table of a GPU run, from its stage JSONs: each figure, its target and whether it was reached."""
from __future__ import annotations

from typing import Any, Iterator

Row = tuple[str, str, str, str]


def rows(run: dict[str, Any]) -> Iterator[Row]:
    """(figure, value, target, reached) for every figure the stages wrote; a figure that is missing, failed or
    was skipped says so in its value."""
    exact, speed, job, scale = (run.get(s) or {} for s in ("exactness", "speed", "job", "scaleout"))
    cases = {k: v for k, v in exact.items() if isinstance(v, dict) and "max_abs_diff" in v and k != "oom"}
    if not cases:
        yield ("fp32 on the device against the CPU, per token", f"not measured ({exact.get('status')})", "≤ 1e-4",
               "–")
    else:
        worst = max(cases, key=lambda k: cases[k]["max_abs_diff"])
        drift = max(cases, key=lambda k: cases[k]["bf16_max_abs_diff"])
        yield (f"fp32 on {exact.get('device')} against the CPU, per token, {len(cases)} scorers",
               f"max {cases[worst]['max_abs_diff']:.1e} ({worst})", f"≤ {exact.get('tolerance')}",
               yes(all(c["passed"] for c in cases.values())))
        yield ("bf16 vs fp32, per token (worst scorer)",
               f"max {cases[drift]['bf16_max_abs_diff']:.3f}, mean {cases[drift]['bf16_mean_abs_diff']:.4f} ({drift})",
               "reported", "–")
    yield ("provoked out of memory", backoff(exact.get("oom")), "backs off, same scores", passed(exact.get("oom")))
    peak = speed.get("peak")
    yield ("matrix peak, measured", f"{peak['tflops']:.1f} TFLOP/s {peak['dtype']}" if ok(peak) else why(peak),
           "–", "–")
    for key, label in (("pll", "PLL `original`"), ("ll_gpt2", "LL"), ("ll_gpt2_shared", "LL, shared prefixes"),
                       ("ll_1b", "LL"), ("ll_1b_shared", "LL, shared prefixes"), ("student", "student (one pass)")):
        figure = speed.get(key)
        target = figure.get("target_mfu") if ok(figure) else None
        name = f"{label}, {figure.get('model') or key}" if ok(figure) else f"{label} ({key})"
        yield (name, throughput(figure), f"MFU ≥ {target:.0%}" if target else "–",
               yes(figure.get("reached")) + held(figure) if target else "–")
    for key, label in (("pll_minicons", "PLL against minicons"), ("ll_gpt2_minicons", "LL against minicons")):
        figure = speed.get(key)
        value = (f"{figure['speedup']:.2f}× ({figure['best']}: {figure['hyps_per_s']:.0f} hyp/s)"
                 if ok(figure) and "speedup" in figure else why(figure))
        yield label, value, "≥ 2×", yes(figure.get("reached")) if ok(figure) else "–"
    wall = job.get("wall_s")
    yield ("whole job: demo, `scorer=[pll]`, empty store",
           f"{wall:.1f} s for {job.get('hypotheses')} hypotheses" if wall is not None and job.get("returncode") == 0
           else f"not finished ({job.get('status', 'not run')})", "–", "–")
    local = scale.get("local")
    for backend in ("processes", "ray"):
        figure = scale.get(backend)
        value = (f"{figure['vs_local']:.2f} of local ({figure['hyps_per_s']:.0f} vs {local['hyps_per_s']:.0f} hyp/s)"
                 if ok(figure) and figure.get("vs_local") is not None else why(figure))
        yield (f"one {'Ray actor' if backend == 'ray' else 'worker process'} against the local engine", value,
               f"≥ {scale.get('target') or 0.95:.0%} of local", yes(figure.get("reached")) if ok(figure) else "–")


def markdown(run: dict[str, Any]) -> str:
    """The table as Markdown, headed by where and when it was measured and the command."""
    first = next((v for v in run.values() if isinstance(v, dict) and "device" in v), {})
    where = {k: first.get(k) or "?" for k in ("device", "date", "torch", "transformers")}
    head = (f"{'CPU rehearsal' if run.get('rehearsal') else 'GPU run'} on {where['device']}, {where['date']}, "
            f"torch {where['torch']}, transformers {where['transformers']}; command `{run.get('command')}`\n\n")
    lines = ["| figure | value | target | reached |", "|---|---|---|---|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows(run)]
    return head + "\n".join(lines) + "\n"


def ok(figure: Any) -> bool:
    return isinstance(figure, dict) and not ({"error", "skipped"} & figure.keys())


def why(figure: Any) -> str:
    if not isinstance(figure, dict):
        return "not measured"
    return f"skipped: {figure['skipped']}" if "skipped" in figure else f"failed: {str(figure.get('error'))[:80]}"


def yes(flag: Any) -> str:
    return {True: "yes", False: "**no**"}.get(flag, "–")


def passed(figure: Any) -> str:
    return yes(figure.get("passed")) if ok(figure) else "–"


def backoff(figure: Any) -> str:
    if not ok(figure):
        return why(figure)
    steps = figure["budgets"]
    return (f"budget {figure['first_budget']:,} → {steps[-1]:,} in {len(steps)} halvings, max |Δ| "
            f"{figure['max_abs_diff']:.1e}" if steps else "no out-of-memory error happened")


def throughput(figure: Any) -> str:
    if not ok(figure):
        return why(figure)
    mfu = f", MFU {figure['mfu']:.1%}" if figure.get("mfu") is not None else ""
    return f"{figure['hyps_per_s']:,.0f} hyp/s{mfu} ({figure['hypotheses']:,} hyps, {figure['dtype']})"


def held(figure: Any) -> str:
    profile = figure.get("profile") if isinstance(figure, dict) else None
    if not profile or profile.get("kernel_share") is None:
        return ""
    return f" (kernels {profile['kernel_share']:.0%} of the time: held by {profile['held_by']})"
