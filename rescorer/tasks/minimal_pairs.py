"""``rescorer task=minimal_pairs``: acceptability judgments on a minimal-pair set
(:func:`rescorer.studies.minimal_pairs.evaluate_pairs`)."""
from __future__ import annotations

from typing import Any

from ..engine import load_scorers
from ..studies.minimal_pairs import evaluate_pairs, scorer_specs
from . import plain, scorer_specs_of

JUDGE_OPTIONS = ("templates", "comparative", "yes_no", "ab")


def run(cfg: Any) -> dict[str, Any]:
    from hydra.utils import instantiate

    task = plain(cfg.task)
    pair_set = instantiate(cfg.pairs, _convert_="all")
    specs = scorer_specs(scorer_specs_of(cfg), task["case"], task["append_period"], task["score_eos"], task["variants"])
    return evaluate_pairs(pair_set.read(), load_scorers(specs, plain(cfg.engine)), task["methods"], cfg.out_dir,
                          pair_set.name, task.get("ensembles") or (), task["ensemble_trials"], alpha=task["alpha"],
                          style=task["prompt_style"], seed=task["seed"],
                          **{key: task[key] for key in JUDGE_OPTIONS if task.get(key)})
