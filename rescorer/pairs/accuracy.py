"""How well judgments do: accuracy overall and per phenomenon (mean ± spread over templates), the correlation of
correctness with the token-length difference (Ide et al. §6), and one JSONL record per pair."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..files import atomic_file, record_text
from .data import Pair
from .methods import Judgments


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson's r, or None where it is undefined (fewer than two points, or a constant side)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    return float(np.corrcoef(x, y)[0, 1])


def summarise(judgments: Judgments, phenomena: Sequence[str], length_difference: np.ndarray) -> dict[str, Any]:
    """Accuracy in % (mean over templates, population std as the spread), per template and per phenomenon;
    ``length_corr``: r between correctness (1/0) and |good| − |bad| in tokens, averaged over templates."""
    correct = judgments.correct
    per_template = 100 * correct.mean(axis=1)
    groups = np.asarray(phenomena, dtype=object)
    by_group = {name: 100 * correct[:, groups == name].mean(axis=1) for name in sorted(set(phenomena))}
    rs = [r for r in (pearson(row, length_difference) for row in correct) if r is not None]
    out: dict[str, Any] = {
        "accuracy": float(per_template.mean()), "spread": float(per_template.std()),
        "templates": dict(zip(judgments.labels, per_template.tolist())),
        "phenomena": {name: float(acc.mean()) for name, acc in by_group.items()},
        "phenomena_spread": {name: float(acc.std()) for name, acc in by_group.items()},
        "length_corr": float(np.mean(rs)) if rs else None,
        "pairs": int(correct.shape[1]), "seconds": judgments.seconds, "rows": judgments.rows,
    }
    if "good_is_a" in judgments.details:  # A/B: how often the model answers A (50% = no letter bias)
        out["answered_a"] = float(100 * ((judgments.good > judgments.bad) == judgments.details["good_is_a"]).mean())
    return out


def pair_records(pairs: Sequence[Pair], results: Mapping[str, Judgments],
                 lengths: Mapping[str, np.ndarray]) -> list[dict[str, Any]]:
    """One record per pair: where it came from, its sentences, token counts per scorer, and per method the
    scores (good, bad) and correctness under each template."""
    records = []
    for i, pair in enumerate(pairs):
        record: dict[str, Any] = {"where": pair.where, "paradigm": pair.paradigm, "phenomenon": pair.phenomenon,
                                  "good": pair.good, "bad": pair.bad,
                                  "tokens": {k: [int(v[0, i]), int(v[1, i])] for k, v in lengths.items()},
                                  "methods": {}}
        for key, j in results.items():
            entry: dict[str, Any] = {"correct": j.correct[:, i].tolist()}
            if j.good is not None:
                entry["good"], entry["bad"] = j.good[:, i].tolist(), j.bad[:, i].tolist()
            entry.update({name: values[i].item() for name, values in j.details.items()})
            record["methods"][key] = entry
        records.append(record)
    return records


def write_pair_records(path: str | Path, records: Sequence[Mapping[str, Any]]) -> Path:
    """The per-pair records as JSONL (one JSON object a line), written atomically."""
    with atomic_file(path) as tmp:
        with tmp.open("w", encoding="utf-8") as handle:
            for record in records:
                handle.write(record_text(record, ensure_ascii=False) + "\n")
    return Path(path)
