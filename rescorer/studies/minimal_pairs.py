"""Acceptability judgments on a minimal-pair set, the study ``rescorer task=minimal_pairs`` runs.

Every method of ``task.methods`` runs with every selected scorer (``scorer=[ll]``; a masked LM once per PLL
variant of ``task.variants``; Yes/No and A/B with causal LMs only), then the ``task.ensembles``. A causal LM's
LP leaves the end of the sentence out unless ``task.score_eos`` (report ``eos_scored``). Writes under
out_dir: report.{json,md} (accuracy overall and per phenomenon, the spread over templates, the correlation of
correctness with the token-length difference, seconds), pairs.jsonl (every pair's scores) and accuracy.png.
"""
from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..engine import BoundScorer
from ..errors import ConfigError, check_known
from ..pairs.accuracy import pair_records, summarise, write_pair_records
from ..pairs.data import Pair
from ..pairs.methods import METHODS, NEEDS_CAUSAL, Judge, Judgments
from ..report.plots import phenomenon_bars
from ..report import write_report
from ..version import TOOL, signature


def evaluate_pairs(pairs: Sequence[Pair], scorers: Mapping[str, BoundScorer], methods: Sequence[str], out_dir: str | Path,
                   name: str = "pairs", ensembles: Sequence[str] = (), trials: int = 10,
                   **judge_options: Any) -> dict[str, Any]:
    """Judge ``pairs`` with each method and scorer ({label: scorer}); write the report, records and plot."""
    start = time.perf_counter()
    check_known("minimal-pair method", methods, METHODS)
    causal = [label for label, s in scorers.items() if hasattr(s.adapter, "next_token")]
    if not causal and ({*methods} & {*NEEDS_CAUSAL} or ensembles):
        raise ConfigError("Yes/No, A/B and ensembles read next-token probabilities: select a causal LM (scorer=[ll])")
    results: dict[str, Judgments] = {}
    lengths, owner = {}, {}
    for label, scorer in scorers.items():
        judge = Judge(scorer, pairs, **judge_options)
        lengths[label] = judge.token_lengths()
        runs = [m for m in methods if label in causal or m not in NEEDS_CAUSAL]
        for method in runs:
            results[f"{label}.{method}"] = judge(method)
            owner[f"{label}.{method}"] = label
        for spec in ensembles if label in causal else ():
            results[f"{label}.ensemble[{spec}]"] = judge.ensemble(spec, trials)
            owner[f"{label}.ensemble[{spec}]"] = label
    phenomena = [p.phenomenon for p in pairs]
    summaries = {key: summarise(j, phenomena, lengths[owner[key]][0] - lengths[owner[key]][1])
                 for key, j in results.items()}

    out = Path(out_dir)
    records = write_pair_records(out / "pairs.jsonl", pair_records(pairs, results, lengths))
    plot = phenomenon_bars(summaries, out / "accuracy.png", f"{name}: accuracy per phenomenon")
    options = {k: v for k, v in sorted(judge_options.items()) if not isinstance(v, (list, tuple))}
    eos = {label: bool(s.adapter.score_eos) for label, s in scorers.items() if hasattr(s.adapter, "score_eos")}
    report = {
        "task": "minimal_pairs", "pairs": name, "n_pairs": len(pairs),
        "paradigms": dict(Counter(p.paradigm for p in pairs)),
        "signature": signature(TOOL, pairs=name, n=len(pairs), **options, trials=trials),
        "scorers": {label: s.signature for label, s in scorers.items()},
        "eos_scored": eos,
        "methods": summaries, "seconds": time.perf_counter() - start,
        "outputs": {"pairs": str(records), "plot": str(plot)},
    }
    columns = ["accuracy", "spread", "length_corr", "seconds", *(f"phenomena.{p}" for p in sorted(set(phenomena)))]
    title = f"{name}: minimal-pair accuracy (%), {len(pairs)} pairs{eos_note(eos)}"
    write_report(out, report, columns, title, key="methods")
    return report


def eos_note(eos: Mapping[str, bool]) -> str:
    """What the report's title says about the end of the sentence, for the causal scorers in ``eos``."""
    if not eos:
        return ""
    if len(set(eos.values())) == 1:
        return ", LP with log P(EOS)" if any(eos.values()) else ", LP without EOS"
    return f", log P(EOS) in LP of {', '.join(label for label, scored in eos.items() if scored)} only"


def is_causal(spec: Mapping[str, Any]) -> bool:
    """Whether a scorer spec reads left to right (it may score the end of the sentence)."""
    return spec.get("kind") == "ll" or (spec.get("kind") == "pcfg" and spec.get("variant") == "causal")


def scorer_specs(selected: Mapping[str, Mapping[str, Any]], case: str, append_period: bool, score_eos: bool,
                 variants: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """The selected scorer specs ({column: options}) with the study's normalisation and, for causal ones, its
    ``score_eos``; a masked LM once per PLL variant in ``variants``."""
    specs = {}
    for name, spec in selected.items():
        spec = {**spec, "case": case, "append_period": append_period}
        if is_causal(spec):
            spec["score_eos"] = score_eos
        for variant in list(variants) if spec.get("kind") == "pll" and variants else [None]:
            key = name if variant is None else f"{name}.{variant}"
            specs[key] = spec if variant is None else {**spec, "variant": variant}
    if not specs:
        raise ConfigError("no scorer selected: add scorer=[ll] or scorer=[pll]")
    return specs
