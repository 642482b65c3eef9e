"""Causal LL with and without context, with and without shared prefixes, on the same real N-best lists."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..log import info
from .common import best_time, save, stamp


def bench_context(model: str, utterances: int = 30, top: int = 10, context: int = 5,
                  engine: dict[str, Any] | None = None, out_dir: str | Path = "exp/bench",
                  student: str | None = None) -> dict[str, Any]:
    """The first ``utterances`` of LibriSpeech dev_other (../shared, else the shipped excerpt), top ``top``, scored
    by one causal LM four ways: no context or the previous ``context`` utterances, each with and without shared
    prefixes. Reports hypotheses per second, the model tokens each way read, and the two ratios that matter:
    prefix sharing's speed-up, and what context costs over none (both with sharing). With ``student`` (a student
    that reads context), that student too, on the same lists with its own context, and its speed-up over the
    causal LM with context."""
    from ..engine import load_scorer
    from ..io.sets import NBestSet
    from ..paths import ROOT, data_root
    from ..scorers.loading import resolve_device

    shared = data_root() / "librispeech-espnet-30best" / "dev_other"
    source = shared if shared.exists() else ROOT / "recipes" / "demo" / "data" / "dev_other"
    nbest = NBestSet(str(source), stop=utterances, top=top).read()
    engine = {"device": "cpu", "threads": 2, **(engine or {}), "store": None, "progress": False}
    device = resolve_device(engine["device"])
    common = dict(case="sentence", append_period=True, **{**engine, "device": device})
    result: dict[str, Any] = stamp(kind="context", model=str(model), utterances=len(nbest),
                                   hypotheses=nbest.num_hypotheses, source=str(source), threads=engine["threads"],
                                   device=device, context_utterances=context)
    base = load_scorer("ll", model, **common)
    adapter = base.adapter
    for label, options in {"no context": {}, f"context {context}": {"context": {"utterances": context}}}.items():
        for share in (False, True):
            scorer = load_scorer("ll", model, loaded=(adapter.tokenizer, adapter.model), share_prefixes=share,
                                 **options, **common)
            name = f"{label}, {'shared prefixes' if share else 'every row in full'}"
            result[name] = rate(scorer, nbest)
            info(f"{name}: {result[name]['hyps_per_s']:.1f} hyp/s ({result[name]['seconds']:.1f} s), "
                  f"{result[name]['model_tokens']:,} model tokens in {result[name]['rows']:,} rows")
    if student:
        scorer = load_scorer("student", student, **{**engine, "device": device})
        result["context student"] = {**rate(scorer, nbest), "model": student,
                                     "context": scorer.context.signature if scorer.context else None}
        result["student_speedup"] = (result[f"context {context}, shared prefixes"]["seconds"]
                                     / result["context student"]["seconds"])
        info(f"context student: {result['context student']['hyps_per_s']:.1f} hyp/s; "
             f"{result['student_speedup']:.1f}x the causal LM with context")
    plain, with_context = "no context", f"context {context}"
    result["prefix_sharing_speedup"] = {
        label: result[f"{label}, every row in full"]["seconds"] / result[f"{label}, shared prefixes"]["seconds"]
        for label in (plain, with_context)}
    result["context_cost"] = (result[f"{with_context}, shared prefixes"]["seconds"]
                              / result[f"{plain}, shared prefixes"]["seconds"])
    result["context_cost_unshared"] = (result[f"{with_context}, every row in full"]["seconds"]
                                       / result[f"{plain}, every row in full"]["seconds"])
    info(f"shared prefixes: {result['prefix_sharing_speedup'][plain]:.2f}x faster without context, "
          f"{result['prefix_sharing_speedup'][with_context]:.2f}x with; context {context} costs "
          f"{result['context_cost']:.2f}x no context (every row in full: {result['context_cost_unshared']:.2f}x)")
    return save(result, out_dir, f"bench_context_{device}.json")



def rate(scorer: Any, nbest: Any) -> dict[str, Any]:
    """Hypotheses per second of ``scorer`` on ``nbest`` (each read after its context, where it reads one), and the
    model tokens and rows it reads."""
    from ..context import scored_texts

    texts = scored_texts(nbest, scorer.context, scorer.normaliser)
    pool = scorer.adapter.pool(scorer.adapter.prepare_all(list(dict.fromkeys(texts))))
    seconds = best_time(lambda: scorer.compute(texts, normalise=False), 1)
    return {"seconds": seconds, "hyps_per_s": len(texts) / seconds, "model_tokens": int(pool.length.sum()),
            "rows": int(pool.rows)}
