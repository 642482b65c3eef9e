"""``python -m rescorer.benchmark.gpu OUT [--budget SECONDS]``: every stage in its own process under its own cap
(a share of the budget), each writing OUT/STAGE.json as it goes; then OUT/gpu.json (all stages) and OUT/gpu.md
(the table), printed last. A stage that fails or runs over its cap is recorded as such and the next one runs.
``GPU_REHEARSAL=1``: the same on the CPU at tiny sizes."""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ...files import record_text, record_value, write_text
from . import exactness, job, scaleout, speed, table
from .plan import Plan
from .record import COMMON

STAGES = {"exactness": (exactness, 0.35), "speed": (speed, 0.35), "job": (job, 0.15), "scaleout": (scaleout, 0.15)}
GRACE = 20  # seconds a stage may run past its cap to write what it has, before it is killed
QUIET = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error", "TOKENIZERS_PARALLELISM": "false",
         "PYTHONUNBUFFERED": "1", "RAY_DEDUP_LOGS": "0"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rescorer.benchmark.gpu", description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--budget", type=float, default=float(os.environ.get("GPU_BUDGET", 420)))
    parser.add_argument("--cache", type=Path, default=Path(os.environ.get("GPU_CACHE", "exp/gpu/models")))
    parser.add_argument("--stage", choices=STAGES, help=argparse.SUPPRESS)  # one stage, in a child process
    parser.add_argument("--seconds", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    plan = Plan.from_environment()
    args.rehearsal = plan.rehearsal
    args.out.mkdir(parents=True, exist_ok=True)
    if args.stage:
        STAGES[args.stage][0].run(args.out, plan, args.seconds, args.cache.resolve())
        return 0
    deadline = time.monotonic() + args.budget
    with open(args.out / "gpu.log", "a", encoding="utf-8") as log:
        for name, (_, share) in STAGES.items():
            cap = min(share * args.budget, deadline - time.monotonic())
            print(f"[gpu] {name}: up to {cap:.0f} s", flush=True)
            staged(name, args, cap, log)
    run = combined(args.out, plan, args.budget)
    write_text(args.out / "gpu.json", record_text(run, indent=2, default=str) + "\n")
    text = table.markdown(run)
    write_text(args.out / "gpu.md", text)
    print(text)
    return 0


def staged(name: str, args: argparse.Namespace, cap: float, log: Any) -> None:
    """Run one stage in a child process; past its cap (and the grace) it is killed and its JSON says so."""
    path = args.out / f"{name}.json"
    path.unlink(missing_ok=True)
    if cap < 10:
        return note(path, name, "skipped: the run's budget was spent", args.rehearsal)
    command = [sys.executable, "-m", "rescorer.benchmark.gpu", str(args.out), "--stage", name, "--seconds", str(cap),
               "--cache", str(args.cache)]
    log.write(f"\n===== {name} (cap {cap:.0f} s) =====\n")
    log.flush()
    child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **QUIET},
                             start_new_session=True)
    try:
        code = child.wait(timeout=cap + GRACE)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        return note(path, name, f"cut: killed at its cap of {cap:.0f} s (what it wrote before stands)", args.rehearsal)
    if code != 0:
        note(path, name, f"failed: the stage exited {code} (gpu.log has its output)", args.rehearsal)


def note(path: Path, name: str, status: str, rehearsal: bool) -> None:
    """Set the stage's status, keeping what it wrote; keys it never wrote are there, as null."""
    data = record_value(path.read_text()) if path.exists() else {}
    data = {**dict.fromkeys((*COMMON, *STAGES[name][0].KEYS)), **data, "stage": name, "status": status}
    data["rehearsal"] = rehearsal
    write_text(path, record_text(data, indent=2, default=str) + "\n")
    print(f"[gpu] {name}: {status}", flush=True)


def combined(out: Path, plan: Plan, budget: float) -> dict[str, Any]:
    run: dict[str, Any] = {"command": "GPU_REHEARSAL=1 bash benchmarks/gpu.sh OUT" if plan.rehearsal
                           else "bash benchmarks/gpu.sh OUT", "rehearsal": plan.rehearsal, "budget_s": budget}
    for name in STAGES:
        path = out / f"{name}.json"
        run[name] = record_value(path.read_text()) if path.exists() else {"status": "not run"}
    return run


if __name__ == "__main__":
    sys.exit(main())
