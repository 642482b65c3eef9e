"""How far bf16 moves per-token scores: |bf16 − fp32| per scored token, same model, texts and device."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

CPU_TEXTS = 10  # bf16 autocast on a CPU is slow (no bf16 units on most): a few texts are enough to see the error


def bf16_error(kind: str, path: Path, texts: Sequence[str], engine: dict[str, Any], options: dict[str, Any],
               limit: int | None = None) -> dict[str, Any]:
    """Max and mean per-token |bf16 − fp32| of our scorer over the first ``limit`` texts (None: all on a GPU,
    ``CPU_TEXTS`` on a CPU; 0: not measured), or why it is n/a."""
    import torch

    from ..engine import load_scorer

    device = engine["device"]
    if limit is None:
        limit = len(texts) if device.startswith("cuda") else CPU_TEXTS
    if limit <= 0:
        return {"note": "n/a (not asked: task.bf16_texts=0)"}
    if device.startswith("cuda") and not torch.cuda.is_bf16_supported():
        return {"note": "n/a (this GPU has no bf16)"}
    subset = list(texts[:limit])
    scores = {}
    for dtype in ("fp32", "bf16"):
        scorer = load_scorer(kind, str(path), **{**engine, "dtype": dtype, "store": None, "progress": False}, **options)
        scores[dtype] = np.concatenate([np.asarray(t, dtype=np.float64) for t in scorer.token_scores(subset)])
    diff = np.abs(scores["bf16"] - scores["fp32"])
    return {"texts": len(subset), "tokens": int(diff.size), "max": float(diff.max(initial=0.0)),
            "mean": float(diff.mean()) if diff.size else 0.0,
            "note": "bf16 autocast on the CPU" if not device.startswith("cuda") else "bf16 autocast"}


def described(error: dict[str, Any]) -> str:
    if "max" not in error:
        return f"per-token |bf16 − fp32|: {error['note']}"
    return (f"per-token |bf16 − fp32| over {error['tokens']} tokens of {error['texts']} texts ({error['note']}): "
            f"max {error['max']:.4f}, mean {error['mean']:.4f} nats")
