"""``rescorer task=rescore``: add LM columns, tune interpolation weights on dev, apply them to every set, report.

Per set: baseline (input 1-best), rescored and oracle WER/BLEU, a paired-bootstrap 95% interval of the
improvement, (P)PPL of the references and the rescored 1-best under each LM; the rescored lists are
written back in their own format (hypotheses re-ranked, column ``rescore`` added), as 1-best text and as
canonical JSONL; a PNG shows the dev metric against the weights.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from .. import __version__
from ..combine import Column, Features, search_weights
from ..combine.interpolate import best_ranks, totals
from ..errors import ConfigError
from ..io.common import write_text
from ..io.sets import Corpus
from ..metrics import NBestStats, make_metric, paired_bootstrap
from ..plots import weight_plot
from ..report import write_report
from ..scorers import Scorer, score_nbest
from ..types import NBest
from .score import instantiate_scorers, perplexities, write_scored

RESCORE_COLUMN = "rescore"


def default_columns(scorers: Mapping[str, Scorer]) -> list[Column]:
    """One tuned column per LM: the first on [0, 1] step 0.05, the others step 0.1 (Salazar et al.)."""
    return [Column(name, step=0.05 if k == 0 else 0.1) for k, name in enumerate(scorers)]


def reranked(nbest: NBest, features: Features, weights: np.ndarray) -> NBest:
    """Hypotheses sorted by their interpolated total (stable: ties keep the toolkit's order), with a column for it."""
    scores = totals(features, weights)
    utterances = []
    for u, utt in enumerate(nbest):
        order = sorted(range(len(utt.hyps)), key=lambda k: -scores[u, k])
        hyps = [utt.hyps[k].with_scores(**{RESCORE_COLUMN: float(scores[u, k])}) for k in order]
        utterances.append(replace(utt, hyps=tuple(hyps)))
    return nbest.with_utterances(utterances)


def write_1best(nbest: NBest, path: Path, with_ids: bool) -> None:
    """The 1-best text: ``id text`` lines (Kaldi ``text``) for ASR, plain lines in order for MT."""
    lines = [(f"{u.id} " if with_ids else "") + (u.hyps[0].text if u.hyps else "") for u in nbest]
    write_text(path, "".join(f"{line}\n" for line in lines))


def tuning_set(corpus: Corpus, tune_on: str | None) -> str:
    if tune_on is None:
        return next((n for n in corpus.sets if n.startswith("dev")), next(iter(corpus.sets)))
    if tune_on not in corpus.sets:
        raise ConfigError(f"task.tune_on={tune_on!r} is not a set of data '{corpus.name}' ({', '.join(corpus.sets)})")
    return tune_on


def rescore(corpus: Corpus, scorers: Mapping[str, Scorer], out_dir: str | Path, base: Column,
            columns: Sequence[Column] | None = None, search: Mapping[str, Any] | None = None,
            tune_on: str | None = None, bootstrap: int = 1000, seed: int = 0) -> dict[str, Any]:
    out = Path(out_dir)
    metric = make_metric(corpus.metric_name, **corpus.metric_options)
    scale = 100.0 if metric.name == "wer" else 1.0
    columns = list(columns) if columns else default_columns(scorers)
    search = dict(search or {"name": "fast"})
    dev = tuning_set(corpus, tune_on)

    loaded = {}
    for name, spec in corpus.sets.items():
        nbest, token_counts = score_nbest(spec.read(), scorers)
        loaded[name] = (nbest, Features.of(nbest, base, columns, token_counts), NBestStats.compute(nbest, metric))

    nbest, features, stats = loaded[dev]
    method = search.pop("name", "fast")
    result = search_weights(method, nbest, features, stats, columns, **search)
    weights = np.array([result.weights[c.name] for c in columns])

    sets = {}
    for name, (nbest, features, stats) in loaded.items():
        ranks = best_ranks(features, weights)
        base_ranks = stats.baseline_ranks()
        ci = paired_bootstrap(stats, base_ranks, ranks, samples=bootstrap, seed=seed)
        new = reranked(nbest, features, weights)
        outputs = write_scored(new, out, name)
        outputs["1best"] = str(out / name / "1best.txt")
        write_1best(new, out / name / "1best.txt", with_ids=metric.name == "wer")
        sets[name] = {
            "format": nbest.fmt, "utterances": len(nbest), "hypotheses": nbest.num_hypotheses,
            "tuned_on_this_set": name == dev,
            "baseline": {metric.name: scale * stats.score(base_ranks)},
            "rescored": {metric.name: scale * stats.score(ranks)},
            "oracle": {metric.name: scale * stats.score(stats.oracle_ranks())},
            "ci95": {"of": f"rescored - baseline {metric.name}", "low": scale * ci["low"],
                     "high": scale * ci["high"], "p_better": ci["p_better"], "samples": ci["samples"]},
            "changed_1best": int((ranks != base_ranks).sum()),
            "ppl": {column: perplexities(new, scorer) for column, scorer in scorers.items()},
            "outputs": outputs,
        }
    plot = weight_plot(result, [c.name for c in columns], metric.name, scale, out / f"weights_{dev}.png")
    signature = "|".join([f"rescorer:{__version__}", metric.signature, f"base:{base.name}",
                          *(f"{c.name}:{result.weights[c.name]:g}/lp:{c.penalty}" for c in columns),
                          f"search:{result.method}"])
    report = {
        "task": "rescore", "data": corpus.name, "metric": metric.name,
        "units": "percent" if metric.name == "wer" else "BLEU (0-100)",
        "tuned_on": dev, "base": base.name, "weights": result.weights,
        "search": {"method": result.method, "settings": result.evaluated, "seconds": result.seconds,
                   "dev": scale * result.dev, "plot": str(plot) if plot else None},
        "scorers": {column: scorer.signature for column, scorer in scorers.items()},
        "signature": signature, "sets": sets,
    }
    table = ["utterances", f"baseline.{metric.name}", f"rescored.{metric.name}", f"oracle.{metric.name}",
             "ci95.low", "ci95.high"]
    weights_text = ", ".join(f"{k}={v:g}" for k, v in result.weights.items()) or "none"
    write_report(out, report, table, f"{corpus.name}: rescored with {weights_text} (tuned on {dev})")
    return report


def run(cfg: Any) -> dict[str, Any]:
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    task = OmegaConf.to_container(cfg.task, resolve=True)
    scorers = instantiate_scorers(cfg)
    tuned = task.get("columns")
    columns = [Column(name, **(spec or {})) for name, spec in tuned.items()] if tuned else None
    return rescore(instantiate(cfg.data, _convert_="all"), scorers, cfg.out_dir, Column(**task["base"]),
                   columns, OmegaConf.to_container(cfg.search, resolve=True), task.get("tune_on"),
                   task.get("bootstrap", 1000), task.get("seed", 0))
