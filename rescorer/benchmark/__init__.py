"""Benchmarks (``rescorer task=bench``): our engine against the peers (``peers``), the host path with a null
model (``host``), weight search (``search``), a student against its teacher (``student``) and causal LL with
context and shared prefixes (``context``).

Models are random-weight networks of real sizes (speed does not depend on the weights): BERT with the real
uncased WordPiece vocabulary when the MiniLM package is installed, else a tokenizer trained on the texts.
Every result carries achieved TFLOP/s and MFU (``flops``; n/a on a CPU or without a model).
"""
from .context import bench_context
from .host import bench_host
from .peers import bench
from .search import bench_search
from .student import bench_student

__all__ = ["bench", "bench_context", "bench_host", "bench_search", "bench_student"]
