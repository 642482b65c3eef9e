"""Texts longer than a model's positions, scored in windows (exact when the text fits).

Masked LMs: the scored tokens are cut into chunks of ``stride = width // 2``; each chunk is scored in a window
of ``width`` tokens centred on it (clamped to the text), so every masked token sees at least ``width // 4``
tokens of context on each side that has them. Causal LMs (Hugging Face's strided perplexity): windows of
``width`` tokens advancing by ``stride``; each token is scored once, in the first window that reaches it, with
at least ``width - stride`` tokens of left context.
"""
from __future__ import annotations

import numpy as np

from .rows import expand


def masked_shifts(n: int, width: int) -> np.ndarray:
    """For each of ``n`` scored tokens, where its window of ``width`` scored tokens starts (all 0 when it fits)."""
    if n <= width:
        return np.zeros(n, dtype=np.int64)
    stride = max(1, width // 2)
    start = (np.arange(n) // stride) * stride - (width - stride) // 2
    return np.clip(start, 0, n - width).astype(np.int64)


def causal_windows(lengths: np.ndarray, width: int, stride: int) -> tuple[np.ndarray, ...]:
    """Windows over texts of ``lengths`` ids, as arrays ``(text, start, end, first)``: the model reads
    ids[start:end] and scores targets ``first … end - 2`` (target j predicts id j + 1); together they score
    every target of a text once (a text of fewer than 2 ids has none). Window i of a text ends at
    min(length, width + i·stride)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    count = np.where(lengths > 1, 1 + -(-np.maximum(lengths - width, 0) // stride), 0)
    text, i = expand(count)
    end = np.minimum(lengths[text], width + i * stride)
    first = np.where(i == 0, 0, np.minimum(lengths[text], width + (i - 1) * stride) - 1)
    return text, np.maximum(end - width, 0), end, first


def model_positions(model, tokenizer) -> int:
    """Tokens a model reads at most: the smaller of the tokenizer's limit and the position embeddings (RoBERTa-
    style models reserve ``pad_token_id + 1`` of those)."""
    config = model.config
    limits = [n for n in (getattr(config, "max_position_embeddings", None), getattr(config, "n_positions", None)) if n]
    if limits and getattr(config, "model_type", "") in ("roberta", "xlm-roberta", "camembert"):
        limits = [limits[0] - (config.pad_token_id or 1) - 1]
    if 0 < getattr(tokenizer, "model_max_length", 0) < 1_000_000:
        limits.append(tokenizer.model_max_length)
    return min(limits) if limits else 1 << 30
