"""Making millions of small objects at once (an N-best list's hypotheses, their score mappings): Python's cyclic
garbage collector would scan the ones already made again and again, and none of them can form a cycle."""
from __future__ import annotations

import contextlib
import gc
from typing import Iterator


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection inside (also as a decorator); nested pauses end with the outermost."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
