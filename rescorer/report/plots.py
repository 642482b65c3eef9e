"""Figures a person would rather look at than a table: the dev metric against the interpolation weights."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..combine import SearchResult
from ..files import atomic_file
from ..metrics import Metric


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend (no display needed), its own INFO lines (``generated new
    fontManager`` on a first start) kept from the command line's output: its warnings still show."""
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
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


MAX_PLOTTED = 200_000  # settings a weight plot draws; a search that tried more is reported without one


def unplotted(result: SearchResult, names: Sequence[str]) -> str | None:
    """Why the search ``result`` has no weight plot (nothing tuned, or too many settings to draw); None if it has."""
    if not names:
        return "no tuned weights to plot"
    if len(result.tried) > MAX_PLOTTED:
        return f"not drawn: {len(result.tried):,} settings were tried (a plot draws at most {MAX_PLOTTED:,})"
    return None


def best_along(axis: np.ndarray, values: np.ndarray, higher_is_better: bool) -> tuple[np.ndarray, np.ndarray]:
    """The distinct weights of one ``axis`` and the best of ``values`` at each (one sort, then one pass)."""
    xs, at = np.unique(axis, return_inverse=True)
    best = np.full(len(xs), -np.inf if higher_is_better else np.inf)
    (np.maximum if higher_is_better else np.minimum).at(best, at, values)
    return xs, best


def weight_plot(result: SearchResult, names: Sequence[str], metric: Metric, path: str | Path,
                labels: Mapping[str, str] | None = None) -> Path | None:
    """A λ curve (one tuned weight) or a heat map (two) of the dev ``metric`` (its label, scale and direction);
    more weights plot the best value along each axis. None (see :func:`unplotted`) for nothing tuned or a search
    too large to draw; the work is linear in the settings tried (one sort per axis)."""
    if unplotted(result, names):
        return None
    values = result.values * metric.scale
    plt = pyplot()
    fig, axes = plt.subplots(1, 1 if len(names) == 2 else len(names), figsize=(6 if len(names) <= 2 else 4 * len(names), 4),
                             squeeze=False)
    if len(names) == 2:
        xs, column = np.unique(result.tried[:, 0], return_inverse=True)
        ys, row = np.unique(result.tried[:, 1], return_inverse=True)
        grid = np.full((len(ys), len(xs)), np.nan)
        grid[row, column] = values
        image = axes[0, 0].imshow(grid, origin="lower", aspect="auto", cmap="viridis" if metric.higher_is_better
                                  else "viridis_r", extent=(*cell_edges(xs), *cell_edges(ys)))
        fig.colorbar(image, ax=axes[0, 0], label=f"dev {metric.label}")
        shown = [(labels or {}).get(name, name) for name in names]
        axes[0, 0].set(xlabel=f"λ {shown[0]}", ylabel=f"λ {shown[1]}")
        axes[0, 0].plot(result.weights[names[0]], result.weights[names[1]], "r*", markersize=12)
    else:
        for k, name in enumerate(names):
            xs, ys = best_along(result.tried[:, k], values, metric.higher_is_better)
            axes[0, k].plot(xs, ys, marker=".")
            axes[0, k].axvline(result.weights[name], color="r", linestyle="--")
            axes[0, k].set(xlabel=f"λ {(labels or {}).get(name, name)}", ylabel=f"dev {metric.label}")
    fig.suptitle(f"dev {metric.label} vs interpolation weights ({result.method} search)")
    return save(fig, path)


def twin_plot(x: list, left: dict[str, tuple[list, str]], right: dict[str, tuple[list, str]], labels: tuple[str, str, str],
              path: str | Path) -> Path:
    """Curves against ``x``: ``left`` on a log axis, ``right`` on a second linear axis ({label: (values, style)});
    ``labels`` names the x, left and right axes."""
    plt = pyplot()
    fig, first = plt.subplots(figsize=(7, 4))
    second = first.twinx()
    for axis, curves in ((first, left), (second, right)):
        for label, (values, style) in curves.items():
            axis.plot(x, values, style, label=label)
    first.set(xlabel=labels[0], ylabel=labels[1], yscale="log")
    second.set(ylabel=labels[2])
    fig.legend(loc="center right")
    return save(fig, path)


def curve_plot(curve: list[dict], path: str | Path) -> Path:
    """Dev pseudo-perplexity and masked-token accuracy against training tokens (domain adaptation)."""
    return twin_plot([c["tokens"] for c in curve],
                     {"dev word PPPL": ([c.get("dev_word_pppl", np.nan) for c in curve], "b.-")},
                     {"masked-token accuracy (train)": ([c["masked_accuracy"] for c in curve], "g.--")},
                     ("training tokens", "dev word-level PPPL", "masked-token accuracy"), path)


def distill_plot(curve: list[dict], path: str | Path) -> Path:
    """Train and dev MSE (standardised targets) and the dev student–teacher Pearson r of the totals and of their
    differences within a list against steps."""
    return twin_plot([c["step"] for c in curve],
                     {"train MSE": ([c["train_mse"] for c in curve], "b.-"),
                      "dev MSE": ([c["dev_mse"] for c in curve], "r.-")},
                     {"dev Pearson r": ([c["dev_pearson"] for c in curve], "g.--"),
                      "dev Pearson r within lists": ([c.get("dev_list_pearson", np.nan) for c in curve], "m.--")},
                     ("training steps", "MSE (standardised)", "Pearson r"), path)


def scatter_plot(x: np.ndarray, y: np.ndarray, path: str | Path, xlabel: str, ylabel: str, title: str = "") -> Path:
    """One point per item with the y = x diagonal (e.g. a student's score against its teacher's)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.scatter(x, y, s=3, alpha=0.3)
    lo, hi = float(min(x.min(), y.min())), float(max(x.max(), y.max()))
    ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    return save(fig, path)


def phenomenon_bars(methods: dict[str, dict], path: str | Path, title: str = "") -> Path:
    """Minimal-pair accuracy per phenomenon, one bar per method (error bar: the spread over templates)."""
    plt = pyplot()
    names = sorted({p for m in methods.values() for p in m["phenomena"]})
    width = 0.8 / max(len(methods), 1)
    fig, ax = plt.subplots(figsize=(min(18.0, 3 + len(names) * (0.4 + 0.12 * len(methods))), 5))
    for k, (method, entry) in enumerate(methods.items()):
        xs = np.arange(len(names)) + (k - (len(methods) - 1) / 2) * width
        ax.bar(xs, [entry["phenomena"].get(n, np.nan) for n in names], width,
               yerr=[entry.get("phenomena_spread", {}).get(n, 0.0) for n in names], capsize=2,
               label=f"{method} ({entry['accuracy']:.1f})")
    ax.axhline(50, color="k", linestyle=":", linewidth=0.8)
    ax.set_xticks(np.arange(len(names)), names, rotation=40, ha="right")
    ax.set(ylabel="accuracy (%)", ylim=(0, 100), title=title)
    ax.legend(fontsize=7, ncol=2, loc="lower left")
    return save(fig, path)


def scatter_grid(panels: dict[str, dict[str, tuple]], path: str | Path, title: str = "") -> Path:
    """Rows × columns of scatter plots: ``panels[row][column] = (x, y, r, xlabel, ylabel)``, r in the title."""
    plt = pyplot()
    columns = list(dict.fromkeys(c for row in panels.values() for c in row))
    fig, axes = plt.subplots(len(panels), len(columns), figsize=(3.2 * len(columns), 2.8 * len(panels)),
                             squeeze=False)
    for i, (row, cells) in enumerate(panels.items()):
        for j, column in enumerate(columns):
            ax = axes[i, j]
            if column not in cells:
                ax.axis("off")
                continue
            x, y, r, xlabel, ylabel = cells[column]
            ax.scatter(x, y, s=4, alpha=0.35)
            ax.set_title(f"{column}: r = {r:.2f}" if r is not None else column, fontsize=9)
            ax.set_xlabel(xlabel, fontsize=8)
            ax.set_ylabel(f"{row}\n{ylabel}" if j == 0 else ylabel, fontsize=8)
    fig.suptitle(title)
    return save(fig, path)
