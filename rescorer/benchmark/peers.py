"""Scoring throughput of our engine and, in the same run, of the peers (minicons, lm-scorer) on the same model,
hypotheses, device and thread count; the ratio is the headline. Every row carries TFLOP/s and MFU."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from ..log import info, rendered
from .common import bench_model, bench_texts, best_time, save, stamp
from .flops import peak_flops, rate, shown, work
from .precision import bf16_error, described

OUT_OF_MEMORY = "out of memory"  # a peer's batch size too large for the device

OPTIONS = {"pll": {"variant": "original"}, "ll": {}}  # what the peers compute


def ours(kind: str, path: Path, texts: list[str], engine: dict[str, Any], repeats: int,
         options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Our engine's time on ``texts`` with ``engine`` settings (``scale``: through worker processes, started within
    the timed call, or Ray actors, started by the warm-up call and then reused as a run's later sets reuse them)
    and the scorer's ``options`` (default: what the peers compute), with the rows, scored tokens and model FLOPs;
    no store, so every run computes."""
    from ..engine import load_scorer

    options = OPTIONS[kind] if options is None else options
    scorer = load_scorer(kind, str(path), **{**engine, "store": None, "progress": False}, **options)
    scorer.score(texts[: min(32, len(texts))])
    seconds = best_time(lambda: scorer.score(texts), repeats)
    return {"seconds": seconds, **work(scorer, texts), "budget": scorer.engine.budget or scorer.adapter.preferred_budget()}


def minicons_run(kind: str, path: Path, texts: list[str], device: str, batch: int, repeats: int) -> float:
    from transformers import PreTrainedTokenizerBase

    if not hasattr(PreTrainedTokenizerBase, "batch_encode_plus"):  # minicons 0.3 calls the removed API
        PreTrainedTokenizerBase.batch_encode_plus = lambda self, *a, **k: self(*a, **k)
    from minicons import scorer as mc

    if kind == "pll":
        model = mc.MaskedLMScorer(str(path), device)
        call = lambda chunk: model.sequence_score(chunk, reduction=lambda x: x.sum(0).item(), PLL_metric="original")
    else:
        model = mc.IncrementalLMScorer(str(path), device)
        call = lambda chunk: model.sequence_score(chunk, reduction=lambda x: x.sum(0).item(), bos_token=True)
    call(texts[:2])
    return best_time(lambda: [call(texts[i : i + batch]) for i in range(0, len(texts), batch)], repeats)


def lm_scorer_run(path: Path, texts: list[str], device: str, batch: int, repeats: int) -> float:
    from lm_scorer.models.gpt2 import GPT2LMScorer

    model = GPT2LMScorer(str(path), device=device, batch_size=batch, eos=False)
    model.sentence_score(texts[:2], reduce="prod", log=True)
    return best_time(lambda: model.sentence_score(texts, reduce="prod", log=True), repeats)


def peer_times(kind: str, path: Path, texts: list[str], device: str, batches: tuple[int, ...],
               peers: tuple[str, ...], repeats: int) -> dict[str, Any]:
    """Seconds of each peer at each batch size, smallest first ("not installed" for a missing one; a batch size
    that runs out of memory is marked so, and larger ones are not tried: the peer's best is among those that ran)."""
    runners = {"minicons": lambda b: minicons_run(kind, path, texts, device, b, repeats)}
    if kind == "ll":
        runners["lm-scorer"] = lambda b: lm_scorer_run(path, texts, device, b, repeats)
    times: dict[str, Any] = {}
    for peer in (p for p in peers if p in runners):
        for batch in sorted(batches):
            try:
                times[f"{peer} b={batch}"] = runners[peer](batch)
            except ImportError:
                times[peer] = "not installed"
                break
            except RuntimeError as err:  # torch's out-of-memory error is one
                if "out of memory" not in str(err).lower():
                    raise
                times[f"{peer} b={batch}"] = OUT_OF_MEMORY
                release_memory()
                break
    return times


def release_memory() -> None:
    """Give back what a failed batch left on the GPU, if one is in use."""
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def bench(kind: str = "pll", size: str = "base", n: int = 200, engine: dict[str, Any] | None = None,
          batches: tuple[int, ...] = (1, 8, 32), repeats: int = 1, peers: tuple[str, ...] = ("minicons", "lm-scorer"),
          cache: str | Path = "exp/bench/models", tokenizer: str | None = None, scales: tuple[str, ...] = (),
          out_dir: str | Path = "exp/bench", bf16_texts: int | None = None) -> dict[str, Any]:
    """Our engine (``engine``: the ``engine.*`` settings; device cpu and 2 threads unless given) against the
    peers at each batch size, on the same random-weight model and real hypotheses; TFLOP/s and MFU of each,
    and the per-token |bf16 − fp32| of ours on ``bf16_texts`` texts (None: all on a GPU, a few on a CPU)."""
    import torch

    from ..scorers.loading import resolve_device, resolve_dtype

    engine = {"device": "cpu", "threads": 2, **(engine or {})}
    torch.set_num_threads(engine["threads"])
    device = engine["device"] = resolve_device(engine["device"])
    threads, dtype = engine["threads"], engine.get("dtype") or "auto"
    texts, source = bench_texts(n)
    path = bench_model("bert" if kind == "pll" else "gpt2", size, Path(cache), tokenizer)
    gpu, peak, note = peak_flops(device, resolve_dtype(dtype, device))
    mine = ours(kind, path, texts, engine, repeats)

    def timed(seconds: float) -> dict[str, Any]:
        return {"seconds": seconds, "hyps_per_s": len(texts) / seconds, **rate(mine["flops"], seconds, peak, note)}
    result: dict[str, Any] = stamp(kind=kind, model=path.name, hypotheses=len(texts), source=source, device=gpu,
                                   threads=threads, dtype=dtype, rescorer={**mine, **timed(mine["seconds"]),
                                   "rows_per_s": mine["rows"] / mine["seconds"]}, peers={}, scaled={})
    for backend in scales:  # the same work through one Ray actor / one worker process
        scale = {"backend": backend, "workers": 1, "cpus_per_worker": threads}
        run = ours(kind, path, texts, {**engine, "scale": scale}, repeats)
        result["scaled"][f"rescorer, engine {backend}, 1 worker"] = {**run, **timed(run["seconds"])}
    for name, seconds in peer_times(kind, path, texts, device, batches, peers, repeats).items():
        result["peers"][name] = timed(seconds) if isinstance(seconds, float) else seconds
    ranked = {k: v for k, v in result["peers"].items() if isinstance(v, dict)}
    if ranked:
        best = min(ranked, key=lambda k: ranked[k]["seconds"])
        result["best_peer"], result["speedup"] = best, ranked[best]["seconds"] / mine["seconds"]
    result["bf16_vs_fp32"] = bf16_error(kind, path, texts, engine, OPTIONS[kind], bf16_texts)
    show(result)
    return save(result, out_dir, f"bench_{kind}_{size}_{'gpu' if device.startswith('cuda') else device}.json")


def show(result: dict[str, Any]) -> None:
    mine = result["rescorer"]
    table = Table(title=f"{result['kind']} on {result['model']} (random weights), {result['hypotheses']} real hypotheses, "
                        f"{result['device']}, {result['threads']} threads, dtype {result['dtype']}",
                  caption=f"torch {result['torch']} · {result['date']} · MFU: model FLOPs / dense peak of the dtype")
    for column in ("scorer", "hyp/s", "seconds", "TFLOP/s", "MFU", "vs rescorer"):
        table.add_column(column, justify="left" if column == "scorer" else "right")
    table.add_row(f"rescorer (budget {mine['budget']})", f"{mine['hyps_per_s']:.2f}", f"{mine['seconds']:.2f}",
                  *shown(mine), "1.00x")
    for name, peer in {**result.get("scaled", {}), **result["peers"]}.items():
        if isinstance(peer, dict):
            table.add_row(name, f"{peer['hyps_per_s']:.2f}", f"{peer['seconds']:.2f}", *shown(peer),
                          f"{peer['seconds'] / mine['seconds']:.2f}x slower")
        else:
            table.add_row(name, peer, "", "", "", "")
    info(rendered(table, 160))
    if "speedup" in result:
        info(f"rescorer vs best peer ({result['best_peer']}): {result['speedup']:.2f}x")
    info(described(result["bf16_vs_fp32"]))
