"""Figures a person would rather look at than a table: the dev metric against the interpolation weights."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .combine import SearchResult
from .io.common import atomic_file


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig, path: str | Path) -> Path:
    """Write ``fig`` as PNG atomically and release it."""
    fig.tight_layout()
    path = Path(path)
    with atomic_file(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    pyplot().close(fig)
    return path


def cell_edges(centres: np.ndarray) -> tuple[float, float]:
    """The outer edges of a heat map whose cells are centred on ``centres`` (evenly spaced)."""
    half = (centres[1] - centres[0]) / 2 if len(centres) > 1 else 0.5
    return float(centres[0] - half), float(centres[-1] + half)


def weight_plot(result: SearchResult, names: list[str], metric: str, scale: float, path: str | Path) -> Path | None:
    """A λ curve (one tuned weight) or a heat map (two); more weights plot the best value along each axis."""
    plt = pyplot()
    if not names:
        return None
    values = result.values * scale
    best = max if "bleu" in metric else min
    fig, axes = plt.subplots(1, 1 if len(names) == 2 else len(names), figsize=(6 if len(names) <= 2 else 4 * len(names), 4),
                             squeeze=False)
    if len(names) == 2:
        xs, ys = np.unique(result.tried[:, 0]), np.unique(result.tried[:, 1])
        grid = np.full((len(ys), len(xs)), np.nan)
        grid[np.searchsorted(ys, result.tried[:, 1]), np.searchsorted(xs, result.tried[:, 0])] = values
        image = axes[0, 0].imshow(grid, origin="lower", aspect="auto", cmap="viridis_r" if best is min else "viridis",
                                  extent=(*cell_edges(xs), *cell_edges(ys)))
        fig.colorbar(image, ax=axes[0, 0], label=f"dev {metric}")
        axes[0, 0].set(xlabel=f"λ {names[0]}", ylabel=f"λ {names[1]}")
        axes[0, 0].plot(result.weights[names[0]], result.weights[names[1]], "r*", markersize=12)
    else:
        for k, name in enumerate(names):
            xs = np.unique(result.tried[:, k])
            ys = [best(values[result.tried[:, k] == x]) for x in xs]
            axes[0, k].plot(xs, ys, marker=".")
            axes[0, k].axvline(result.weights[name], color="r", linestyle="--")
            axes[0, k].set(xlabel=f"λ {name}", ylabel=f"dev {metric}")
    fig.suptitle(f"dev {metric} vs interpolation weights ({result.method} search)")
    return save(fig, path)


def curve_plot(curve: list[dict], path: str | Path) -> Path:
    """Dev pseudo-perplexity and masked-token accuracy against training tokens (domain adaptation)."""
    plt = pyplot()
    tokens = [c["tokens"] for c in curve]
    fig, left = plt.subplots(figsize=(7, 4))
    left.plot(tokens, [c.get("dev_word_pppl", np.nan) for c in curve], "b.-", label="dev word PPPL")
    left.set(xlabel="training tokens", ylabel="dev word-level PPPL", yscale="log")
    right = left.twinx()
    right.plot(tokens, [c["masked_accuracy"] for c in curve], "g.--", label="masked-token accuracy (train)")
    right.set(ylabel="masked-token accuracy")
    fig.legend(loc="center right")
    return save(fig, path)
