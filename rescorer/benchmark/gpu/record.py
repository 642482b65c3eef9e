"""One stage's JSON, rewritten after every figure, so that a stage stopped at its cap leaves what it measured."""
from __future__ import annotations

import time
import traceback
from pathlib import Path
from typing import Any, Callable

from ...files import record_text, write_text


COMMON = ("stage", "status", "rehearsal", "device", "torch", "transformers", "date", "seconds")


class Record:
    """The figures of one stage: ``keys`` start as None (so a stage cut short writes the same keys), each figure is
    saved as soon as it is known; ``seconds`` is the stage's cap, counted from now."""

    def __init__(self, path: Path, stage: str, keys: tuple[str, ...], seconds: float, plan: Any):
        import torch
        import transformers

        self.path, self.deadline = path, time.monotonic() + seconds
        self.data: dict[str, Any] = {
            "stage": stage, "status": "running", "rehearsal": plan.rehearsal, "device": device_name(plan.device),
            "torch": torch.__version__, "transformers": transformers.__version__,
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "seconds": None, **dict.fromkeys(keys)}
        self.started = time.monotonic()
        self.save()

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def figure(self, key: str, measure: Callable[[], Any], needs: float = 0.0) -> Any:
        """``measure()`` saved under ``key``; a failure is saved as its error (the stage goes on), and a figure
        that would start with less than ``needs`` seconds of the cap left is skipped, saying so."""
        if needs and self.left() < needs:
            self.data[key] = {"skipped": f"under {needs:.0f} s of the stage's cap left"}
        else:
            try:
                self.data[key] = measure()
            except Exception as err:  # one figure's failure must not cost the others: say it and go on
                self.data[key] = {"error": f"{type(err).__name__}: {err}"[:2000],
                                  "where": traceback.format_exc(limit=-3)[-2000:]}
        self.save()
        return self.data[key]

    def finish(self) -> None:
        failed = [k for k, v in self.data.items() if isinstance(v, dict) and ("error" in v or "skipped" in v)]
        self.data["status"] = "done" if not failed else f"done, without: {', '.join(failed)}"
        self.save()

    def save(self) -> None:
        self.data["seconds"] = round(time.monotonic() - self.started, 2)
        write_text(self.path, record_text(self.data, indent=2, default=str) + "\n")


def device_name(device: str) -> str:
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    import platform

    return f"cpu ({platform.processor() or platform.machine()})"
