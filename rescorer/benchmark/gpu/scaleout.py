"""Stage 4: the same PLL work through one worker (a worker process; one Ray actor where Ray is installed) against
the local engine on the same device; a worker process starts within the timed call, as each call of a run pays it,
and the Ray actor is started once by the warm-up, as a run's one pool of actors is."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from ..peers import ours
from .models import excerpt_texts, model
from .plan import Plan
from .record import Record

TARGET = 0.95  # a worker's throughput against the local engine's
OPTIONS = {"variant": "original"}
KEYS = ("target", "hypotheses", "local", "processes", "ray")


def run(out: Path, plan: Plan, seconds: float, cache: Path) -> None:
    record = Record(out / "scaleout.json", "scaleout", KEYS, seconds, plan)
    record.data["target"] = TARGET
    path, _ = model("masked", plan.sizes["masked"], cache)
    texts = excerpt_texts(plan.peer_texts)
    record.data["hypotheses"] = len(texts)
    engine = {"device": plan.device, "threads": plan.threads}
    local = record.figure("local", lambda: timed(ours("pll", path, texts, engine, plan.repeats, OPTIONS), texts))
    for backend in ("processes", "ray"):
        def measure() -> dict[str, Any]:
            if backend == "ray" and importlib.util.find_spec("ray") is None:
                return {"skipped": "Ray is not installed on this machine"}
            scale = {"backend": backend, "workers": 1, "cpus_per_worker": plan.threads}
            figure = timed(ours("pll", path, texts, {**engine, "scale": scale}, 1, OPTIONS), texts)
            ratio = local["seconds"] / figure["seconds"] if "seconds" in local else None
            return {**figure, "vs_local": ratio, "reached": None if ratio is None else ratio >= TARGET}
        record.figure(backend, measure, needs=15)
    record.finish()


def timed(run: dict[str, Any], texts: list[str]) -> dict[str, Any]:
    return {"seconds": run["seconds"], "hyps_per_s": len(texts) / run["seconds"], "rows": run["rows"]}
