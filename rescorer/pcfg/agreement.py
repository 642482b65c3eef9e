"""How close a language model is to the true distribution (Jumelet & Zuidema §5.1, Table 1, Figure 1):
(pseudo-)perplexities of model and grammar over the same tokens, their ratio, and Spearman ρ and R² between
the model's token log-probs and the exact ones."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import numpy as np
from scipy import stats

from ..errors import ScorerError
from ..report.plots import pyplot, save


def aligned(model: Sequence[Sequence[float]], truth: Sequence[Sequence[float]],
            texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Flat per-word arrays of the model's and the grammar's log-probs; a sentence whose token count is not
    its word count (a tokenizer that is not one token per word) is an error naming it."""
    for m, t, text in zip(model, truth, texts):
        if len(m) != len(t):
            raise ScorerError(f"{len(m)} model tokens but {len(t)} words in {text!r}: a word-level tokenizer is needed")
    return np.concatenate([np.asarray(m, float) for m in model] or [np.zeros(0)]), \
        np.concatenate([np.asarray(t, float) for t in truth] or [np.zeros(0)])


def agreement(model: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    """PPL of each (exp of minus the mean log-prob), their ratio (model / lower bound), Spearman ρ and R² (the
    share of the variance of the exact log-probs a linear fit on the model's explains, as in the paper)."""
    model, truth = np.asarray(model, float), np.asarray(truth, float)
    finite = np.isfinite(model) & np.isfinite(truth)
    model_ppl, truth_ppl = math.exp(-model.mean()), math.exp(-truth.mean())
    fit = stats.linregress(model[finite], truth[finite])
    return {"tokens": int(len(model)), "model_ppl": model_ppl, "pcfg_ppl": truth_ppl, "ratio": model_ppl / truth_ppl,
            "spearman": float(stats.spearmanr(model[finite], truth[finite]).statistic), "r2": float(fit.rvalue ** 2),
            "slope": float(fit.slope), "intercept": float(fit.intercept)}


def agreement_plot(panels: dict[str, tuple[np.ndarray, np.ndarray, dict]], path: str | Path) -> Path:
    """One panel per LM (Figure 1 of the paper): its token log-probs against the exact ones, the fitted line
    and y = x, with ρ and R² in the title."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4.6), squeeze=False)
    for ax, (name, (model, truth, summary)) in zip(axes[0], panels.items()):
        keep = np.isfinite(model) & np.isfinite(truth)
        ax.scatter(truth[keep], model[keep], s=2, alpha=0.15, rasterized=True)
        lo, hi = float(truth[keep].min()), float(truth[keep].max())
        ax.plot([lo, hi], [lo, hi], "k--", lw=0.8, label="y = x")
        xs = np.linspace(lo, hi, 2)
        ax.plot(xs, np.polyval(np.polyfit(truth[keep], model[keep], 1), xs), "r-", lw=1, label="linear fit")
        ax.set(xlabel="PCFG log P (exact)", ylabel=f"{name} log P",
               title=f"{name}: ρ = {summary['spearman']:.3f}, R² = {summary['r2']:.3f}")
        ax.legend(loc="upper left", fontsize=8)
    return save(fig, path)
