"""Texts that begin alike, read once: consecutive token sequences packed into prefix trees, one model row each.

N-best hypotheses of one utterance share their first words, and with context they all share the context: in a
tree every shared beginning is one set of nodes. A row holds a tree's nodes; a node sees itself and its
ancestors (a 4D attention mask) at the position of its depth, so each node's next-token distribution is the one
the sequence alone would give.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .rows import RowPool


@dataclass(frozen=True)
class Forest:
    """Trees as flat arrays: per node its token, parent (row-local, -1 at a root) and depth; per target the node
    whose next-token distribution scores it and the token it scores; per row where its nodes and targets begin."""

    token: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    node_start: np.ndarray    # [R]
    nodes: np.ndarray         # [R]
    target_node: np.ndarray   # row-local node of each target
    target_token: np.ndarray
    target_start: np.ndarray  # [R]
    targets: np.ndarray       # [R]
    sentence: np.ndarray      # [R] the first sentence of the row
    span: np.ndarray          # [R] how many consecutive sentences the row holds


def plant(sentences: Sequence[np.ndarray], prefix: np.ndarray, limit: int) -> Forest:
    """Consecutive ``sentences`` (token ids) in trees of at most ``limit`` nodes (a longer sentence gets a tree of
    its own); sentence s scores its ids after the first ``1 + prefix[s]`` (the first id and its context)."""
    token, parent, depth = [], [], []
    node_start, target_node, target_token, target_start, first, span = [], [], [], [], [], []
    children: dict[tuple[int, int], int] = {}
    for s, ids in enumerate(sentences):
        ids = ids.tolist()
        if not node_start or len(token) - node_start[-1] + len(ids) - shared(children, ids) > limit:
            node_start.append(len(token))
            target_start.append(len(target_node))
            first.append(s)
            span.append(0)
            children = {}
        base, up, path = node_start[-1], -1, []
        for k, tid in enumerate(ids):
            node = children.get((up, tid))
            if node is None:
                node = len(token) - base
                children[(up, tid)] = node
                token.append(tid)
                parent.append(up)
                depth.append(k)
            path.append(node)
            up = node
        scored = range(1 + int(prefix[s]), len(ids))
        target_node.extend(path[j - 1] for j in scored)
        target_token.extend(ids[j] for j in scored)
        span[-1] += 1
    ends = np.r_[node_start[1:], len(token)] if node_start else np.zeros(0, dtype=np.int64)
    target_ends = np.r_[target_start[1:], len(target_node)] if target_start else np.zeros(0, dtype=np.int64)
    as_int = lambda values: np.asarray(values, dtype=np.int64)  # noqa: E731
    return Forest(as_int(token), as_int(parent), as_int(depth), as_int(node_start), as_int(ends) - as_int(node_start),
                  as_int(target_node), as_int(target_token), as_int(target_start),
                  as_int(target_ends) - as_int(target_start), as_int(first), as_int(span))


def shared(children: dict[tuple[int, int], int], ids: list[int]) -> int:
    """How many leading ``ids`` a tree (its ``children``: (parent, token) → node) holds already."""
    up = -1
    for k, tid in enumerate(ids):
        up = children.get((up, tid), -2)
        if up == -2:
            return k
    return len(ids)


def forest_pool(forest: Forest, sentence_targets: np.ndarray) -> RowPool:
    """A row per tree; its targets are those of its sentences, in order."""
    return RowPool(forest.sentence, forest.nodes, np.zeros(len(forest.nodes), dtype=np.int64), forest.targets,
                   sentence_targets, {"forest": forest}, span=forest.span)


def ancestors(parent: np.ndarray) -> np.ndarray:
    """``[B, N, N]``: whether node j is node i itself or one of its ancestors, for rows of row-local ``parent``
    pointers ``[B, N]`` (-1: none)."""
    rows, width = parent.shape
    seen = np.zeros((rows, width, width), dtype=bool)
    seen[:, np.arange(width), np.arange(width)] = True
    at = np.broadcast_to(np.arange(width), (rows, width)).copy()
    row = np.arange(rows)[:, None]
    column = np.arange(width)[None, :]
    while True:
        at = np.where(at >= 0, np.take_along_axis(parent, np.maximum(at, 0), axis=1), -1)
        live = at >= 0
        if not live.any():
            return seen
        seen[np.broadcast_to(row, at.shape)[live], np.broadcast_to(column, at.shape)[live], at[live]] = True
