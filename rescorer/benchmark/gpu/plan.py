"""What the GPU run measures and at which sizes; the rehearsal runs the same steps on the CPU, small."""
from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    """Sizes and settings of one run. ``sizes`` maps a role (masked, causal, llama, student; job: the masked LM of
    the whole job, the shipped one's shape) to a
    :data:`rescorer.devtools.SIZES` name; ``texts``: hypotheses per speed figure; ``exact_texts``: per exactness
    case; ``matmul``: the side of the square product that measures the peak."""

    rehearsal: bool
    device: str
    dtype: str
    sizes: dict
    texts: int
    peer_texts: int
    exact_texts: int
    batches: tuple[int, ...]
    matmul: int
    repeats: int
    job_every: int
    threads: int

    @classmethod
    def of(cls, rehearsal: bool) -> "Plan":
        if rehearsal:
            return cls(True, "cpu", "fp32", dict.fromkeys(("masked", "causal", "llama", "student", "job"), "tiny"),
                       texts=24, peer_texts=12, exact_texts=8, batches=(8,), matmul=256, repeats=1, job_every=30,
                       threads=1)
        return cls(False, "cuda", "bf16", {"masked": "base", "causal": "base", "llama": "1b", "student": "minilm",
                                       "job": "minilm"},
                   texts=5000, peer_texts=2000, exact_texts=50, batches=(32, 128, 512), matmul=8192, repeats=2,
                   job_every=1, threads=os.cpu_count() or 1)

    @classmethod
    def from_environment(cls) -> "Plan":
        return cls.of(os.environ.get("GPU_REHEARSAL", "") not in ("", "0"))
