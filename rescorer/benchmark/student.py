"""A distilled student against its PLL teacher on the same real hypotheses, with TFLOP/s and MFU of each."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..log import info
from .common import bench_texts, best_time, save, stamp
from .flops import peak_flops, rate, shown, work


def bench_student(student: str, teacher: str, n: int = 200, engine: dict[str, Any] | None = None,
                  out_dir: str | Path = "exp/bench") -> dict[str, Any]:
    """A distilled student against its PLL teacher (word_l2r) on the same real hypotheses, one run."""
    from ..engine import load_scorer
    from ..scorers.loading import resolve_device

    engine = {"device": "cpu", "threads": 2, **(engine or {}), "store": None, "progress": False}
    threads, device = engine["threads"], resolve_device(engine["device"])
    texts, source = bench_texts(n)
    common = dict(case="sentence", append_period=True, **{**engine, "device": device})
    scorers = {"teacher PLL (word_l2r)": load_scorer("pll", teacher, variant="word_l2r", **common),
               "student (one pass)": load_scorer("student", student, **common)}
    result: dict[str, Any] = stamp(kind="student", hypotheses=len(texts), source=source, threads=threads, device=device)
    for name, scorer in scorers.items():
        scorer.score(texts[:16])
        seconds = best_time(lambda: scorer.score(texts), 1)
        gpu, peak, note = peak_flops(device, scorer.adapter.dtype)
        cost = work(scorer, texts)
        result[name] = {"model": scorer.signature.split("|")[1], "seconds": seconds, "hyps_per_s": len(texts) / seconds,
                        **cost, **rate(cost["flops"], seconds, peak, note)}
    teacher_s, student_s = (result[name]["seconds"] for name in scorers)
    result["speedup"] = teacher_s / student_s
    for name in scorers:
        tflops, mfu = shown(result[name])
        info(f"{name}: {result[name]['hyps_per_s']:.1f} hyp/s ({result[name]['seconds']:.2f} s), "
              f"{tflops} TFLOP/s, MFU {mfu}")
    info(f"student vs teacher: {result['speedup']:.1f}x faster on {len(texts)} hypotheses, {threads} threads, {device}")
    return save(result, out_dir, f"bench_student_{device}.json")
