"""Stage 3: the quick-start job (``+experiment=demo scorer=[pll]``: tune on the excerpt's dev_other, apply to its
test_clean) on the device from an empty store, through the command line as a user runs it; its wall time."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .models import model
from .plan import Plan
from .record import Record

KEYS = ("model", "command", "wall_s", "returncode", "hypotheses", "report", "output_tail")


def run(out: Path, plan: Plan, seconds: float, cache: Path) -> None:
    record = Record(out / "job.json", "job", KEYS, seconds, plan)
    path, record.data["model"] = model("masked", plan.sizes["job"], cache)
    work = cache.parent / "job"
    store = work / "store.sqlite"
    store.unlink(missing_ok=True)
    command = [sys.executable, "-m", "rescorer.cli", "+experiment=demo", "scorer=[pll]", f"model.masked.path={path}",
               f"engine.device={plan.device}", f"engine.store={store}", f"engine.threads={plan.threads}",
               f"out_dir={work / 'rescore'}", *(f"+data.sets.{name}.every={plan.job_every}"
                                                 for name in ("dev_other", "test_clean"))]
    record.data["command"] = " ".join(command[1:])
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=max(1.0, record.left() - 5))
    except subprocess.TimeoutExpired as late:
        record.data["output_tail"] = str(late.output or "")[-3000:]
        record.data["status"] = "cut at the stage's cap"
        record.save()
        return
    record.data["wall_s"] = time.perf_counter() - start
    record.data["returncode"] = done.returncode
    record.data["output_tail"] = (done.stdout + done.stderr)[-3000:]
    record.data["hypotheses"] = 2 * 10 * len(range(0, 300, plan.job_every))
    report = work / "rescore" / "report.json"
    if done.returncode == 0 and report.exists():
        record.data["report"] = summary(json.loads(report.read_text()))
    record.finish()
    if done.returncode != 0:
        record.data["status"] = f"failed: the job exited {done.returncode}"
        record.save()


def summary(report: dict[str, Any]) -> dict[str, Any]:
    """Each set's metric before and after, from the job's report.json."""
    metric = report.get("metric")
    return {name: {"hypotheses": entry.get("hypotheses"), "before": entry.get("baseline"),
                   "after": entry.get("rescored"), "changed_1best": entry.get("changed_1best")}
            for name, entry in report.get("sets", {}).items() if isinstance(entry, dict)} | {"metric": metric}
