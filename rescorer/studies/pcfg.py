"""A known grammar as ground truth (Jumelet & Zuidema 2023), the study ``rescorer task=pcfg`` runs.

Stages (each resumable: rerun the same command): induce or load the grammar → sample train/dev/test
(seeded; dev and test hold no train sentence, paper §4.1) → train a small masked LM (``train.adapt``) and a
small causal LM (``train.causal``) on train, with whitespace word tokenizers (``train.scratch``) → score test
with the project's PLL (``original``) and LL scorers and with the PCFG's exact conditionals (all through the
engine and score store) → report (P)PPL of each LM and of the grammar (the lower bound), their ratio,
Spearman ρ and R², and Figure 1.
Words the LM tokenizer maps to [UNK] are left out of the comparison, as in the paper.
"""
from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..engine import load_scorer
from ..errors import ConfigError, check_known
from ..files import record_text, record_value, write_text
from ..options import TRAINING, checked
from ..pcfg import PCFG, Induction, load_grammar, write_grammar
from ..pcfg.agreement import agreement, agreement_plot, aligned
from ..report.plots import curve_plot
from ..report import write_report
from ..train.adapt import AdaptConfig, adapt
from ..train.causal import CausalConfig, train_causal
from ..train.scratch import Shape, build_lm, word_tokenizer
from ..version import TOOL, signature

SPLITS = ("train", "dev", "test")
MODELS = ("masked", "causal")


def sample_corpora(grammar: PCFG, sizes: Mapping[str, int], seed: int = 0, min_length: int = 1,
                   max_length: int | None = None, disjoint: bool = True) -> dict[str, list[str]]:
    """Seeded train/dev/test samples; with ``disjoint``, dev and test sentences that occur in an earlier
    split are drawn again (duplicates within a split stay: they are part of the distribution)."""
    corpora: dict[str, list[str]] = {}
    seen: set[str] = set()
    for k, split in enumerate(SPLITS):
        out: list[str] = []
        for round_ in range(1000):
            missing = sizes[split] - len(out)
            if missing <= 0:
                break
            draw_seed = int(np.random.SeedSequence([seed, k, round_]).generate_state(1)[0])
            drawn = grammar.sample(missing, seed=draw_seed, min_length=min_length, max_length=max_length)
            out += [s for s in drawn if not (disjoint and s in seen)]
        if len(out) < sizes[split]:
            raise ConfigError(f"could not draw {sizes[split]} {split} sentences outside the earlier splits")
        corpora[split] = out
        seen |= set(out)
    return corpora


def write_corpora(corpora: Mapping[str, Sequence[str]], out: Path, origin: Mapping[str, Any]) -> None:
    """``out/corpus/{train,dev,test}.txt`` and ``origin.json`` (grammar and sampling options); a resumed run
    must have the same origin, or its models would continue on other data."""
    record = out / "corpus" / "origin.json"
    if record.exists() and record_value(record.read_text()) != record_value(record_text(origin)):
        raise ConfigError(f"{out} holds a run sampled with other options ({record}); choose another out_dir")
    for split, texts in corpora.items():
        write_text(out / "corpus" / f"{split}.txt", "\n".join(texts) + "\n")
    write_text(record, record_text(origin, indent=1) + "\n")


def timed(out: Path, work) -> tuple[Any, float]:
    """Run ``work()`` and add its wall time to ``out/seconds.json`` (the total over resumed runs)."""
    record = out / "seconds.json"
    before = record_value(record.read_text())["seconds"] if record.exists() else 0.0
    start = time.perf_counter()
    result = work()
    total = before + time.perf_counter() - start
    write_text(record, record_text({"seconds": total}) + "\n")
    return result, total


def train_lm(kind: str, options: Mapping[str, Any], corpora: Mapping[str, Sequence[str]], out: Path,
             common: Mapping[str, Any]) -> tuple[Path, dict[str, Any], float]:
    """Build (once) and train (or resume) the ``kind`` LM under ``out/kind``; → (best model, state, seconds)."""
    causal = kind == "causal"
    shape = Shape(**options.get("shape", {}))
    where = out / kind
    if not (where / "init" / "config.json").exists():
        tokenizer = word_tokenizer(corpora["train"], causal, common["min_frequency"])
        build_lm(tokenizer, shape, causal, where / "init", seed=common["seed"])
    dev = list(corpora["dev"][: options.get("dev_size", 200)])
    run = {k: options[k] for k in ("steps", "batch_size", "lr", "warmup", "eval_every") if k in options}
    stage = dict(max_seconds=common["max_seconds"], until=options.get("until"), device=common["device"],
                 seed=common["seed"], progress=common["progress"])
    if causal:
        cfg = CausalConfig(init=str(where / "init"), out_dir=str(where), max_length=shape.max_length, **run, **stage)
        state, seconds = timed(where, lambda: train_causal(cfg, corpora["train"], dev))
    else:
        cfg = AdaptConfig(encoder=str(where / "init"), train=[], out_dir=str(where), dev_texts=dev,
                          max_length=shape.max_length + 2, head_lr=run.get("lr", 5e-4), freeze_embeddings=False,
                          variant="original", **run, **stage)
        state, seconds = timed(where, lambda: adapt(cfg, corpora["train"]))
        curve_plot(state["curve"], where / "curve.png")
    return where / "best", state, seconds


def compare(kind: str, model_dir: Path, truth: Sequence[Sequence[float]], texts: Sequence[str],
            common: Mapping[str, Any]) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    """Score ``texts`` with the trained LM through the project's own scorer and compare it with ``truth``."""
    scorer = (load_scorer("pll", str(model_dir), variant="original", **common["engine"]) if kind == "masked"
              else load_scorer("ll", str(model_dir), bos="bos", **common["engine"]))
    model, exact = aligned(scorer.token_scores(list(texts)), truth, texts)
    vocabulary = scorer.tokenizer.get_vocab()
    known = np.array([w in vocabulary for t in texts for w in t.split()], dtype=bool)
    summary = {**agreement(model[known], exact[known]), "unk_skipped": int((~known).sum()), "model": str(model_dir),
               "signature": scorer.signature}
    return summary, model[known], exact[known]


def run_experiment(options: Mapping[str, Any], out_dir: str | Path,
                   engine: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The whole study on plain options (what ``conf/task/pcfg.yaml`` holds) and ``engine.*`` settings (the
    trained LMs and the grammar are scored with them); returns the report."""
    out = Path(out_dir)
    models = list(options.get("models", MODELS))
    check_known("task.models entry", models, MODELS)
    for prefix, values in [("task.", options), *((f"task.{m}.", options.get(m) or {}) for m in models)]:
        checked(prefix, values, TRAINING)
    engine = dict(engine or {})
    induction = Induction(**options.get("induction", {}))
    grammar = load_grammar(options["grammar"], induction)
    if options.get("save_grammar"):
        write_grammar(grammar, out / "grammar.pcfg", comment=f"from {options['grammar']} with {asdict(induction)}")
    seed = options.get("seed", 0)
    sampling = {"sizes": options["sizes"], "seed": seed, "min_length": options.get("min_length", 1),
                "max_length": options.get("max_length"), "disjoint": options.get("disjoint", True)}
    corpora = sample_corpora(grammar, **sampling)
    write_corpora(corpora, out, {"grammar": grammar.fingerprint, **sampling})
    test = corpora["test"]
    common = {"seed": seed, "max_seconds": options.get("max_seconds", float("inf")),
              "device": engine.get("device", "auto"), "progress": engine.get("progress"),
              "min_frequency": options.get("min_frequency", 1), "engine": engine}
    exact = {kind: load_scorer("pcfg", None, grammar=grammar, variant=kind, **engine).token_scores(test)
             for kind in models or MODELS}  # no models: the lower bounds alone
    words = sum(len(t.split()) for t in test)
    report: dict[str, Any] = {
        "task": "pcfg", "signature": signature(TOOL, grammar=grammar.fingerprint, seed=seed),
        "grammar": {"source": str(options["grammar"]), "induction": asdict(induction),
                    "fingerprint": grammar.fingerprint, "symbols": grammar.num_symbols, "binary_rules": len(grammar.prob),
                    "lexical_rules": len(grammar.lex_prob), "words": len(grammar.words)},
        "corpus": {split: {"sentences": len(texts), "words": sum(len(t.split()) for t in texts)}
                   for split, texts in corpora.items()},
        "bounds": {kind: float(np.exp(-sum(map(sum, scores)) / words)) for kind, scores in exact.items()},
        "sets": {}}
    panels = {}
    for kind in models:
        best, state, seconds = train_lm(kind, options.get(kind, {}), corpora, out, common)
        summary, model, true = compare(kind, best, exact[kind], test, common)
        report["sets"][kind] = {**summary, "train_seconds": seconds, "steps": state["step"],
                                "best_step": state["best_step"], "curve": state["curve"]}
        panels[f"{'BERT' if kind == 'masked' else 'GPT-2'}-shaped {kind} LM"] = (model, true, summary)
    if panels:
        agreement_plot(panels, out / "agreement.png")
    bounds = ", ".join(f"{'PPPL' if kind == 'masked' else 'PPL'} {v:.2f}" for kind, v in report["bounds"].items())
    write_report(out, report, ["model_ppl", "pcfg_ppl", "ratio", "spearman", "r2", "tokens", "unk_skipped",
                               "steps", "train_seconds"],
                 f"PCFG ground truth: LMs vs exact conditionals on {len(test)} test sentences (lower bounds: {bounds})")
    return report
