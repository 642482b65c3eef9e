"""A peer benchmarked at growing batch sizes keeps the sizes that ran when a larger one runs out of memory."""
from __future__ import annotations

import pytest

from rescorer.benchmark import peers


def test_a_batch_size_that_runs_out_of_memory_is_marked_and_larger_ones_are_not_tried(monkeypatch):
    tried = []

    def run(kind, path, texts, device, batch, repeats):
        tried.append(batch)
        if batch >= 128:
            raise RuntimeError("CUDA out of memory. Tried to allocate 105.00 GiB")
        return 1.0 / batch

    monkeypatch.setattr(peers, "minicons_run", run)
    times = peers.peer_times("pll", None, ["a"], "cpu", (512, 32, 128), ("minicons",), 1)
    assert times == {"minicons b=32": 1 / 32, "minicons b=128": peers.OUT_OF_MEMORY}
    assert tried == [32, 128]


def test_another_runtime_error_of_a_peer_is_not_taken_for_memory(monkeypatch):
    monkeypatch.setattr(peers, "minicons_run", lambda *args: (_ for _ in ()).throw(RuntimeError("shape mismatch")))
    with pytest.raises(RuntimeError, match="shape mismatch"):
        peers.peer_times("pll", None, ["a"], "cpu", (8,), ("minicons",), 1)
