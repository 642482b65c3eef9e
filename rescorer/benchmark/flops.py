"""Model FLOPs and the share of the device's peak they reach (MFU).

FLOPs of a row of L tokens: 2·(non-embedding weights)·L + attention 4·layers·L²·H + the LM head (2·V·H) at the
positions that need it (PLL: the masked one; LL: every one). They count the full model's work, so skipping the
last layer away from the mask (PLL) shows as more FLOP/s, not fewer FLOPs. Peaks are dense (no sparsity) from
the vendors' data sheets, per dtype: bf16 and fp16 on the tensor cores, fp32 without TF32 (torch's default).
"""
from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np

# (name as in torch.cuda.get_device_name, most specific first) → FLOP/s by dtype; None: not supported.
PEAKS: list[tuple[str, dict[str, float | None]]] = [
    ("H100 PCIe", {"bf16": 756e12, "fp16": 756e12, "fp32": 51e12}),
    ("H100 NVL", {"bf16": 835e12, "fp16": 835e12, "fp32": 60e12}),
    ("H100", {"bf16": 989e12, "fp16": 989e12, "fp32": 67e12}),
    ("H200", {"bf16": 989e12, "fp16": 989e12, "fp32": 67e12}),
    ("A100", {"bf16": 312e12, "fp16": 312e12, "fp32": 19.5e12}),
    ("A10", {"bf16": 125e12, "fp16": 125e12, "fp32": 31.2e12}),
    ("L40S", {"bf16": 362e12, "fp16": 362e12, "fp32": 91.6e12}),
    ("L40", {"bf16": 181e12, "fp16": 181e12, "fp32": 90.5e12}),
    ("L4", {"bf16": 121e12, "fp16": 121e12, "fp32": 30.3e12}),
    ("RTX 4090", {"bf16": 165e12, "fp16": 165e12, "fp32": 82.6e12}),
    ("V100", {"bf16": None, "fp16": 125e12, "fp32": 15.7e12}),
    ("T4", {"bf16": None, "fp16": 65e12, "fp32": 8.1e12}),
]
DTYPE_NAMES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def peak_flops(device: str, dtype: Any) -> tuple[str, float | None, str]:
    """The device's name, its dense peak FLOP/s in ``dtype`` (a torch dtype) and, when there is none, why."""
    import torch

    if not device.startswith("cuda"):
        return "cpu", None, "n/a (CPU)"
    gpu = torch.cuda.get_device_name(torch.device(device))
    return (gpu, *peak_of(gpu, DTYPE_NAMES.get(str(dtype).removeprefix("torch."), str(dtype))))


def peak_of(gpu: str, dtype: str) -> tuple[float | None, str]:
    """The dense peak FLOP/s of the GPU named ``gpu`` in ``dtype`` (bf16, fp16, fp32), or None and why."""
    for key, peaks in PEAKS:
        if re.search(rf"\b{re.escape(key)}\b", gpu):
            peak = peaks.get(dtype)
            return peak, "" if peak else f"n/a ({key} has no {dtype} peak)"
    return None, f"n/a (no peak known for {gpu})"


def flops_per_row(model: Any, length: Any, head_positions: Any) -> Any:
    """Model FLOPs of rows of ``length`` tokens (scalars or arrays) with the LM head at ``head_positions``."""
    config = model.config
    hidden, layers = config.hidden_size, config.num_hidden_layers
    embeddings = model.get_input_embeddings().weight.numel()
    body = sum(p.numel() for n, p in model.base_model.named_parameters() if "embed" not in n)
    return 2.0 * body * length + 4.0 * layers * length * length * hidden + 2.0 * embeddings * head_positions


def work(scorer: Any, texts: Sequence[str]) -> dict[str, Any]:
    """Rows, scored tokens and model FLOPs of scoring ``texts`` with a bound scorer (pll, ll or student)."""
    adapter = scorer.adapter
    pool = adapter.pool(adapter.prepare_all(scorer.normalise(texts)))
    length = pool.length.astype(np.float64)
    head = {"pll": np.ones_like(length), "ll": length}.get(adapter.kind, np.zeros_like(length))
    return {"rows": pool.rows, "tokens": int(pool.count.sum()),
            "flops": float(np.sum(flops_per_row(adapter.model, length, head)))}


def rate(flops: float | None, seconds: float, peak: float | None, note: str) -> dict[str, Any]:
    """Achieved TFLOP/s and MFU (the share of ``peak``; None with ``note`` saying why)."""
    achieved = flops / seconds if flops is not None else None
    return {"tflops": achieved / 1e12 if achieved is not None else None,
            "mfu": achieved / peak if achieved is not None and peak else None, "mfu_note": note}


def shown(entry: dict[str, Any]) -> tuple[str, str]:
    """The TFLOP/s and MFU cells of a table row."""
    tflops = "n/a" if entry.get("tflops") is None else f"{entry['tflops']:.3g}"
    mfu = entry.get("mfu")
    return tflops, f"{100 * mfu:.1f}%" if mfu is not None else (entry.get("mfu_note") or "n/a")
