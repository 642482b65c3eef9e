"""``rescorer task=desiderata``: Kauf & Ivanova's desiderata for each PLL variant on a sentence set
(:func:`rescorer.studies.desiderata.desiderata`)."""
from __future__ import annotations

from typing import Any

from ..engine import load_scorer
from ..pairs.data import read_sentences
from ..studies.desiderata import desiderata
from . import plain


def run(cfg: Any) -> dict[str, Any]:
    task = plain(cfg.task)
    engine = plain(cfg.engine)
    common = dict(case=task["case"], append_period=task["append_period"])
    masked = {v: load_scorer("pll", task["masked"], variant=v, **engine, **common) for v in task["variants"]}
    causal = load_scorer("ll", task["causal"], score_eos=False, **engine, **common) if task["causal"] else None
    sentences = read_sentences(task["sentences"]["path"], task["sentences"]["column"])
    return desiderata(sentences, masked, causal, cfg.out_dir, task["sentences"]["name"], dict(task["frames"]),
                      task["language"])
