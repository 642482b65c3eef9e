"""``rescorer task=bench``: scoring throughput against the peers, the host path with a null model, weight-search
speed, student vs teacher."""
from __future__ import annotations

from typing import Any

from ..benchmark import bench, bench_context, bench_host, bench_search, bench_student
from . import plain

ENGINE_OVERRIDES = ("threads", "device", "dtype", "budget")


def run(cfg: Any) -> dict[str, Any]:
    options = plain(cfg.task)
    engine = {**plain(cfg.engine), **{k: options.pop(k) for k in ENGINE_OVERRIDES if options.get(k) is not None}}
    if options["kind"] == "search":
        return bench_search(cfg.out_dir)
    if options["kind"] == "host":
        return bench_host(options["host_n"], max(3, options["repeats"]), options["cache"], cfg.out_dir)
    if options["kind"] == "context":
        return bench_context(options["causal"], options["utterances"], options["top"], options["context"], engine,
                             cfg.out_dir, options["context_student"])
    if options["kind"] == "student":
        return bench_student(options["student"], options["teacher"], options["n"], engine, cfg.out_dir)
    keys = ("kind", "size", "n", "repeats", "cache", "tokenizer", "bf16_texts")
    return bench(**{k: options.get(k) for k in keys}, engine=engine, batches=tuple(options["batches"]),
                 peers=tuple(options["peers"]), scales=tuple(options.get("scales") or ()), out_dir=cfg.out_dir)
