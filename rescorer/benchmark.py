"""Benchmarks (``rescorer task=bench``): scoring throughput of our engine and, in the same run, of the peers (minicons,
lm-scorer) on the same model, hypotheses, device and thread count; the ratio is the headline.

Models are random-weight networks of real sizes (speed does not depend on the weights): BERT with the real
uncased WordPiece vocabulary when the MiniLM package is installed, else a tokenizer trained on the texts.
On a GPU it also reports the share of the card's bf16 peak FLOP/s that the useful work reached.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

from rich.console import Console
from rich.table import Table

from .io.common import write_text
from .paths import ROOT, data_root

# Dense bf16 tensor-core peaks (FLOP/s) by device name, from the vendors' data sheets.
BF16_PEAK = {"H100": 989e12, "H200": 989e12, "A100": 312e12, "L4": 121e12, "A10": 125e12}


def bench_texts(n: int) -> tuple[list[str], str]:
    """``n`` distinct real hypotheses spread over LibriSpeech dev_other (../shared), else the shipped excerpt."""
    from .io import read_nbest

    shared = data_root() / "librispeech-espnet-30best" / "dev_other"
    source = shared if shared.exists() else ROOT / "recipes" / "demo" / "data" / "dev_other"
    texts = list(dict.fromkeys(t for t in read_nbest(source).texts() if t))
    step = max(1, len(texts) // n)
    return texts[::step][:n], str(source)


def bench_model(arch: str, size: str, cache: Path, tokenizer_dir: str | None = None) -> Path:
    """A random ``arch`` model of ``size`` saved under ``cache`` (built once); BERT gets ``tokenizer_dir``'s
    tokenizer, else the real uncased one from the MiniLM package when it is installed."""
    from transformers import AutoTokenizer

    from .devtools import build_model, real_bert_tokenizer

    texts, _ = bench_texts(5000)
    vocab = 30522 if arch == "bert" else 50257
    tokenizer = None
    if arch == "bert":
        tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir) if tokenizer_dir else real_bert_tokenizer()
    name = f"{arch}-{size}" + ("-uncased" if tokenizer is not None else "")
    return build_model(arch, size, texts, cache / name, vocab_size=vocab, tokenizer=tokenizer)


def best_time(fn: Callable[[], Any], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def flops_per_row(model: Any, length: int, head_positions: int) -> float:
    """Useful FLOPs of one row: 2·(non-embedding weights)·L + attention 4·layers·L²·H + the LM head at
    ``head_positions`` positions (2·V·H each)."""
    config = model.config
    hidden = config.hidden_size
    layers = config.num_hidden_layers
    embeddings = model.get_input_embeddings().weight.numel()
    body = sum(p.numel() for n, p in model.base_model.named_parameters() if "embed" not in n)
    return 2.0 * body * length + 4.0 * layers * length * length * hidden + 2.0 * embeddings * head_positions


def ours(kind: str, path: Path, texts: list[str], engine: dict[str, Any], repeats: int) -> dict[str, Any]:
    """Our engine's time on ``texts`` with ``engine`` settings (``scale``: through Ray / worker processes, their
    start-up included); no store, so every run computes."""
    from .engine import load_scorer

    options = {"variant": "original"} if kind == "pll" else {}
    scorer = load_scorer(kind, str(path), **{**engine, "store": None, "progress": False}, **options)
    scorer.score(texts[: min(32, len(texts))])
    seconds = best_time(lambda: scorer.score(texts), repeats)
    adapter = scorer.adapter
    pool = adapter.pool(adapter.prepare_all(scorer.normalise(texts)))
    lengths = pool.length.tolist()
    flops = sum(flops_per_row(adapter.model, n, 1 if kind == "pll" else n) for n in lengths)
    return {"seconds": seconds, "rows": pool.rows, "tokens": int(pool.count.sum()),
            "flops": flops, "budget": scorer.engine.budget or adapter.preferred_budget()}


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


def peak_flops(device: str) -> tuple[str, float | None]:
    import torch

    if not device.startswith("cuda"):
        return "cpu", None
    name = torch.cuda.get_device_name()
    return name, next((v for k, v in BF16_PEAK.items() if k in name), None)


def bench(kind: str = "pll", size: str = "base", n: int = 200, engine: dict[str, Any] | None = None,
          batches: tuple[int, ...] = (1, 8, 32), repeats: int = 1, peers: tuple[str, ...] = ("minicons", "lm-scorer"),
          cache: str | Path = "exp/bench/models", tokenizer: str | None = None, scales: tuple[str, ...] = (),
          out_dir: str | Path = "exp/bench") -> dict[str, Any]:
    """Our engine (``engine``: the ``engine.*`` settings; device cpu and 2 threads unless given) against the
    peers at each batch size, on the same random-weight model and real hypotheses."""
    import torch

    from .scorers.loading import resolve_device

    engine = {"device": "cpu", "threads": 2, **(engine or {})}
    torch.set_num_threads(engine["threads"])
    device = engine["device"] = resolve_device(engine["device"])
    threads, dtype = engine["threads"], engine.get("dtype", "auto")
    texts, source = bench_texts(n)
    arch = "bert" if kind == "pll" else "gpt2"
    path = bench_model(arch, size, Path(cache), tokenizer)
    gpu, peak = peak_flops(device)
    mine = ours(kind, path, texts, engine, repeats)
    result: dict[str, Any] = {
        "kind": kind, "model": path.name, "hypotheses": len(texts), "source": source, "device": gpu,
        "threads": threads, "dtype": dtype, "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"),
        "rescorer": {**mine, "hyps_per_s": len(texts) / mine["seconds"], "rows_per_s": mine["rows"] / mine["seconds"],
                     "tflops": mine["flops"] / mine["seconds"] / 1e12,
                     "peak_fraction": mine["flops"] / mine["seconds"] / peak if peak else None},
        "peers": {}, "scaled": {},
    }
    for backend in scales:  # the same work through one Ray actor / one worker process
        scale = {"backend": backend, "workers": 1, "cpus_per_worker": threads}
        run = ours(kind, path, texts, {**engine, "scale": scale}, repeats)
        result["scaled"][f"rescorer, engine {backend}, 1 worker"] = {**run, "hyps_per_s": len(texts) / run["seconds"],
                                                    "peak_fraction": run["flops"] / run["seconds"] / peak if peak else None}
    runners = {"minicons": lambda b: minicons_run(kind, path, texts, device, b, repeats)}
    if kind == "ll":
        runners["lm-scorer"] = lambda b: lm_scorer_run(path, texts, device, b, repeats)
    for peer in peers:
        if peer not in runners:
            continue
        for batch in batches:
            try:
                seconds = runners[peer](batch)
            except ImportError:
                result["peers"][peer] = "not installed"
                break
            result["peers"][f"{peer} b={batch}"] = {"seconds": seconds, "hyps_per_s": len(texts) / seconds}
    timed = {k: v for k, v in result["peers"].items() if isinstance(v, dict)}
    if timed:
        best = min(timed, key=lambda k: timed[k]["seconds"])
        result["best_peer"] = best
        result["speedup"] = timed[best]["seconds"] / mine["seconds"]
    show(result)
    out = Path(out_dir) / f"bench_{kind}_{size}_{'gpu' if peak else device}.json"
    write_text(out, json.dumps(result, indent=2) + "\n")
    return result


def show(result: dict[str, Any]) -> None:
    mine = result["rescorer"]
    table = Table(title=f"{result['kind']} on {result['model']} (random weights), {result['hypotheses']} real hypotheses, "
                        f"{result['device']}, {result['threads']} threads, dtype {result['dtype']}",
                  caption=f"torch {result['torch']} · {result['date']}")
    for column in ("scorer", "hyp/s", "seconds", "vs rescorer"):
        table.add_column(column, justify="left" if column == "scorer" else "right")
    extra = f", {mine['tflops']:.1f} TFLOP/s" + (f" = {100 * mine['peak_fraction']:.1f}% of bf16 peak"
                                                 if mine["peak_fraction"] else "")
    table.add_row(f"rescorer (budget {mine['budget']}{extra})", f"{mine['hyps_per_s']:.2f}", f"{mine['seconds']:.2f}",
                  "1.00x")
    for name, peer in {**result.get("scaled", {}), **result["peers"]}.items():
        if isinstance(peer, dict):
            table.add_row(name, f"{peer['hyps_per_s']:.2f}", f"{peer['seconds']:.2f}",
                          f"{peer['seconds'] / mine['seconds']:.2f}x slower")
        else:
            table.add_row(name, peer, "", "")
    Console(width=140).print(table)
    if "speedup" in result:
        print(f"rescorer vs best peer ({result['best_peer']}): {result['speedup']:.2f}x")


def bench_search(out_dir: str | Path = "exp/bench", repeats: int = 3) -> dict[str, Any]:
    """Weight search on real LibriSpeech lists (dev_other + test_clean, ~5.5k utterances × 30): a 21×11 grid
    over the ESPnet ``ctc`` and ``lm`` columns, fast (sufficient statistics) vs paper-faithful (jiwer per setting)."""
    from .combine import Column, Features, fast_search, grid_search
    from .io import read_nbest
    from .metrics import NBestStats, make_metric

    root = data_root() / "librispeech-espnet-30best"
    if not root.exists():
        raise FileNotFoundError(f"the search benchmark needs {root}")
    parts = [read_nbest(root / name, refs=root / name / "references" / "ref_wer.trn")
             for name in ("dev_other", "test_clean")]
    nbest = parts[0].with_utterances(parts[0].utterances + parts[1].utterances)
    columns = [Column("ctc", step=0.05), Column("lm", step=0.1)]
    features = Features.of(nbest, Column("decoder"), columns)
    stats = NBestStats.compute(nbest, make_metric("wer"))
    fast = min((fast_search(features, stats, columns) for _ in range(repeats)), key=lambda r: r.seconds)
    grid = grid_search(nbest, features, stats, columns)
    result = {"kind": "search", "utterances": len(nbest), "hypotheses": nbest.num_hypotheses,
              "settings": fast.evaluated, "fast_seconds": fast.seconds, "grid_seconds": grid.seconds,
              "same_optimum": fast.weights == grid.weights, "weights": fast.weights, "wer": 100 * fast.dev}
    print(f"search: {result['settings']} settings over {result['utterances']} utterances × 30: fast {fast.seconds:.3f} s, "
          f"paper-faithful grid {grid.seconds:.1f} s ({grid.seconds / fast.seconds:.0f}x); same optimum: "
          f"{result['same_optimum']} ({fast.weights}, WER {result['wer']:.2f}%)")
    write_text(Path(out_dir) / "bench_search.json", json.dumps(result, indent=2) + "\n")
    return result


def bench_student(student: str, teacher: str, n: int = 200, engine: dict[str, Any] | None = None,
                  out_dir: str | Path = "exp/bench") -> dict[str, Any]:
    """A distilled student against its PLL teacher (word_l2r) on the same real hypotheses, one run."""
    import torch

    from .engine import load_scorer

    engine = {"device": "cpu", "threads": 2, **(engine or {}), "store": None, "progress": False}
    threads, device = engine["threads"], engine["device"]
    texts, source = bench_texts(n)
    common = dict(case="sentence", append_period=True, **engine)
    scorers = {"teacher PLL (word_l2r)": load_scorer("pll", teacher, variant="word_l2r", **common),
               "student (one pass)": load_scorer("student", student, **common)}
    result: dict[str, Any] = {"kind": "student", "hypotheses": len(texts), "source": source, "threads": threads,
                              "device": device, "torch": torch.__version__, "date": time.strftime("%Y-%m-%d")}
    for name, scorer in scorers.items():
        scorer.score(texts[:16])
        seconds = best_time(lambda: scorer.score(texts), 1)
        result[name] = {"model": scorer.signature.split("|")[1], "seconds": seconds, "hyps_per_s": len(texts) / seconds}
    teacher_s, student_s = (result[name]["seconds"] for name in scorers)
    result["speedup"] = teacher_s / student_s
    for name in scorers:
        print(f"{name}: {result[name]['hyps_per_s']:.1f} hyp/s ({result[name]['seconds']:.2f} s)")
    print(f"student vs teacher: {result['speedup']:.1f}x faster on {len(texts)} hypotheses, {threads} threads, {device}")
    write_text(Path(out_dir) / f"bench_student_{device}.json", json.dumps(result, indent=2) + "\n")
    return result

