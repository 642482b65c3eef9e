"""Run a scorer over texts: dedupe, reuse the store, batch rows by token budget, back off on OOM, show progress."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np
from tqdm.auto import tqdm

from ..store import ScoreStore
from .batching import row_pool, rows_in_budget

if TYPE_CHECKING:
    from ..scorers.base import Scorer

Scores = dict[str, tuple[float, list[float]]]


@dataclass
class EngineConfig:
    """How rows are run: token ``budget`` per batch (padding counted), progress bar, store flush interval,
    ``compile`` (torch.compile each model layer) and ``scale`` (None: this process; a
    :class:`~rescorer.engine.scale.ScaleConfig`: Ray actors or one process per GPU)."""

    budget: int | None = None
    progress: bool | None = None
    flush_seconds: float = 2.0
    compile: bool = False
    scale: Any = None


@dataclass
class EngineStats:
    sentences: int = 0
    cached: int = 0
    rows: int = 0
    rows_computed: int = 0
    seconds: float = 0.0
    budgets: list[int] = field(default_factory=list)

    @property
    def rows_per_second(self) -> float:
        return self.rows_computed / self.seconds if self.seconds else 0.0


def is_oom(err: BaseException) -> bool:
    return "out of memory" in str(err).lower() or type(err).__name__ == "OutOfMemoryError"


def compute(scorer: "Scorer", todo: Sequence[str], config: EngineConfig, stats: EngineStats) -> Iterator[Scores]:
    """Score the distinct texts ``todo`` in this process; yield finished sentences every ``flush_seconds``."""
    sentences = [scorer.prepare(t) for t in todo]
    rows = np.array([scorer.num_rows(s) for s in sentences], dtype=np.int64)
    lengths = np.array([scorer.row_length(s) for s in sentences], dtype=np.int64)
    sentence_of, row_of, length_of = row_pool(rows, lengths)
    stats.rows += len(sentence_of)
    values = [np.zeros(scorer.num_targets(s)) for s in sentences]
    remaining = rows.copy()
    finished: Scores = {todo[i]: (0.0, []) for i in np.flatnonzero(remaining == 0)}
    budget = config.budget or scorer.budget
    last_flush = time.perf_counter()
    show = config.progress

    def settle(picked: slice, outputs: Any) -> None:
        for s, r, out in zip(sentence_of[picked], row_of[picked], outputs() if callable(outputs) else outputs):
            values[s][scorer.targets(sentences[s], int(r))] = out
            remaining[s] -= 1
            if remaining[s] == 0:
                finished[todo[s]] = (float(values[s].sum()), values[s].tolist())

    with tqdm(total=len(sentence_of), unit="row", desc=scorer.kind, disable=None if show is None else not show,
              dynamic_ncols=True) as bar:
        position, pending = 0, None  # pending: the batch launched last, read after the next one is launched
        while position < len(sentence_of):
            picked = slice(position, min(len(sentence_of), position + rows_in_budget(int(length_of[position]), budget)))
            items = [(sentences[s], int(r)) for s, r in zip(sentence_of[picked], row_of[picked])]
            try:
                outputs = scorer.forward(items)
            except RuntimeError as err:
                if not is_oom(err) or budget <= int(length_of[position]):
                    raise
                budget //= 2
                stats.budgets.append(budget)
                scorer.release_memory()
                continue
            if pending is not None:
                settle(*pending)
            pending, position = (picked, outputs), picked.stop
            stats.rows_computed += len(items)
            bar.update(len(items))
            if time.perf_counter() - last_flush > config.flush_seconds:
                yield finished
                finished, last_flush = {}, time.perf_counter()
        if pending is not None:
            settle(*pending)
    yield finished


def run(scorer: "Scorer", texts: Sequence[str], store: ScoreStore | None = None,
        config: EngineConfig | None = None) -> tuple[Scores, EngineStats]:
    """Scores of the distinct scored ``texts`` ({text: (total, per-token scores)}) and what it cost.

    Texts already in ``store`` are not scored again; finished sentences are stored as they come, so an
    interrupted run resumes where it stopped."""
    config = config or EngineConfig()
    start = time.perf_counter()
    unique = list(dict.fromkeys(texts))
    signature = scorer.signature
    done = store.get(signature, unique) if store is not None else {}
    todo = [t for t in unique if t not in done]
    stats = EngineStats(sentences=len(unique), cached=len(done))
    if todo:
        chunks = compute(scorer, todo, config, stats)
        if config.scale is not None and scorer.spec is not None:  # in-memory models score here
            from .scale import scale_out

            chunks = scale_out(scorer, todo, config, stats)
        for chunk in chunks:
            done.update(chunk)
            if store is not None:
                store.put(signature, chunk)
    stats.seconds = time.perf_counter() - start
    return done, stats
