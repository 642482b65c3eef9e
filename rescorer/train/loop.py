"""The one training loop of adaptation, distillation and the small causal LMs.

An :class:`Objective` says what a step and a dev evaluation are; :func:`train` owns the rest: resuming from
``out_dir/last`` (weights, optimiser, scheduler, step, the objective's counters, the train metrics since the
last evaluation), a torch seed per step (dropout is the same after a resume), evaluating every
``eval_every`` steps, keeping the best checkpoint by the objective's dev metric and the last one, stopping at
the step, ``until``, wall-time or patience limit, a progress bar and the learning curve.
"""
from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..engine.progress import Meter
from ..errors import ConfigError, short_repr
from ..files import record_text, record_value, write_text
from .checkpoint import load_checkpoint, save_checkpoint

LEGACY_BEST = ("best_pppl", "best_ppl", "best_dev_mse")  # the best dev metric in runs saved before this loop


@dataclass(frozen=True)
class Limits:
    """How long a run goes and how often it is evaluated."""

    steps: int                      # the whole run (the progress bar's total; always evaluated at its end)
    eval_every: int
    until: int | None = None        # stop after this step (a stage of a longer run); the next run resumes
    max_seconds: float = math.inf   # stop after this much wall time; the next run resumes
    patience: int | None = None     # stop after this many evaluations in a row without a better dev metric
    record_at_stop: bool = False    # evaluate where a time limit cuts the steps since the last evaluation


class Objective(ABC):
    """What is trained and how: set ``model``, ``tokenizer``, ``optimizer`` (and ``scheduler``) in ``setup``."""

    name = "train"                                  # the progress bar's label
    metrics: tuple[str, ...] = ("train_loss",)      # what ``step`` returns, averaged over an evaluation window
    select: tuple[str, str] = ("dev_loss", "min")   # the dev metric that picks the best checkpoint, min | max
    shown: tuple[str, ...] = ("train_loss",)        # curve fields on the progress bar
    best_name = "best"                              # the best checkpoint's directory under out_dir
    seed = 0
    device = "cpu"
    model: Any
    tokenizer: Any
    optimizer: Any
    scheduler: Any = None

    @abstractmethod
    def setup(self, resume: Path | None) -> None:
        """Load the model and tokenizer (from ``resume``, a checkpoint, when given) and build the optimiser."""

    @abstractmethod
    def step(self, index: int) -> dict[str, float]:
        """Train on batch ``index`` (a function of the index alone); its ``metrics``, and optionally their
        ``weight`` in the window average."""

    @abstractmethod
    def evaluate(self) -> dict[str, float]:
        """Dev metrics of the current model (called in eval mode; may be empty: then the latest is best)."""

    def counters(self, step: int) -> dict[str, float]:
        """Extra curve fields at ``step`` (tokens seen, epochs)."""
        return {}

    def state_dict(self) -> dict[str, Any]:
        """What the objective needs to resume (JSON)."""
        return {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what ``state_dict`` returned."""


class TokenCounting(Objective):
    """An objective whose steps add to ``self.tokens`` (the training tokens seen, a curve field)."""

    tokens = 0

    def counters(self, step: int) -> dict[str, float]:
        return {"tokens": self.tokens}

    def state_dict(self) -> dict[str, Any]:
        return {"tokens": self.tokens}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.tokens = state["tokens"]


# What may change between the stages of one training: where it runs and how long (a staged run goes on)
RESUMABLE = frozenset({"epochs", "steps", "until", "max_seconds", "progress", "device", "engine", "out_dir"})


def start_run(out_dir: str | Path, options: Mapping[str, Any]) -> Path:
    """Create ``out_dir`` and record the run's options in ``config.json``; quiet Hugging Face's bars. A run that
    would resume a checkpoint (``out_dir/last``) recorded with other options is refused, naming what differs: only
    where and how long it runs may change between its stages (:data:`RESUMABLE`)."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    text = record_text(dict(options), indent=1, default=str) + "\n"
    recorded = out / "config.json"
    if (out / "last").is_dir() and recorded.is_file():
        before, now = record_value(recorded.read_text(encoding="utf-8")), record_value(text)
        differ = [k for k in dict.fromkeys([*before, *now]) if k not in RESUMABLE and before.get(k) != now.get(k)]
        if differ:
            first = differ[0]
            raise ConfigError(f"out_dir={out} holds a training started with other options ({', '.join(differ)}; "
                              f"{first}: {short_repr(before.get(first))} → {short_repr(now.get(first))}), which "
                              "its checkpoint would mix with these: resume it with its own options, or choose a new "
                              "out_dir")
    write_text(recorded, text)
    return out


def train(objective: Objective, limits: Limits, out_dir: str | Path, progress: bool | None = None) -> dict[str, Any]:
    """Run (or resume) ``objective`` under ``limits``; → the state: ``step``, ``best_step``, ``curve`` (one
    entry per evaluation), ``stopped`` (steps | until | patience | time), …"""
    import torch

    out = Path(out_dir)
    state = resume(objective, out)
    objective.model.train()
    start = time.perf_counter()
    if not state["curve"]:
        record(objective, out, state)
    with Meter(objective.name, limits.steps, limits.steps, "step", progress) as meter:
        meter.skip(state["step"], state["step"])
        while (stopped := stop_reason(state, limits, time.perf_counter() - start)) is None:
            torch.manual_seed(objective.seed * 1_000_003 + state["step"])
            state["window"].append(objective.step(state["step"]))
            state["step"] += 1
            meter.update(1, 1)
            if state["step"] % limits.eval_every == 0 or state["step"] == limits.steps:
                entry = record(objective, out, state)
                meter.note({k: f"{entry[k]:.4g}" for k in (*objective.shown, objective.select[0]) if k in entry})
    state["stopped"] = stopped
    if limits.record_at_stop and state["window"]:
        record(objective, out, state)
    else:
        save(objective, out, "last", state)
    return state


def stop_reason(state: Mapping[str, Any], limits: Limits, elapsed: float) -> str | None:
    """Why the run stops before its next step, or None to go on."""
    if state["step"] >= limits.steps:
        return "steps"
    if limits.until is not None and state["step"] >= limits.until:
        return "until"
    if limits.patience is not None and state["stale"] >= limits.patience:
        return "patience"
    return "time" if elapsed >= limits.max_seconds else None


def resume(objective: Objective, out: Path) -> dict[str, Any]:
    """Set the objective up, from ``out/last`` when there is one; → the loop state."""
    saved = load_checkpoint(out, device=objective.device)
    objective.setup(out / "last" if saved else None)
    fresh = {"step": 0, "best": math.inf, "best_step": None, "stale": 0, "window": [], "curve": []}
    if saved is None:
        return fresh
    state, optimizers = saved
    objective.optimizer.load_state_dict(optimizers["optimizer"])
    if objective.scheduler is not None:
        objective.scheduler.load_state_dict(optimizers["scheduler"])
    objective.load_state_dict(state.get("objective", state))  # a run saved before this loop kept it at the top
    legacy = next((state[k] for k in LEGACY_BEST if k in state), math.inf)
    return {**fresh, "best": legacy, **state}


def record(objective: Objective, out: Path, state: dict[str, Any]) -> dict[str, Any]:
    """Evaluate, log a point of the curve (train metrics averaged since the last one), keep the best
    checkpoint, count evaluations without improvement, save the last checkpoint."""
    objective.model.eval()
    dev = objective.evaluate()
    objective.model.train()
    entry = {"step": state["step"], **objective.counters(state["step"]),
             **window_mean(state["window"], objective.metrics), **dev}
    state["window"] = []
    state["curve"].append(entry)
    if selection_key(entry, objective.select) < state["best"]:
        state.update(best=selection_key(entry, objective.select), best_step=state["step"], stale=0)
        save(objective, out, objective.best_name, state)
    else:
        state["stale"] += 1
    save(objective, out, "last", state)
    return entry


def window_mean(window: list[Mapping[str, float]], names: tuple[str, ...]) -> dict[str, float]:
    """Each metric's weighted mean over the steps of ``window`` (NaN when there were none)."""
    weights = [step.get("weight", 1.0) for step in window]
    total = sum(weights)
    return {name: sum(w * step[name] for w, step in zip(weights, window)) / total if window else math.nan
            for name in names}


def selection_key(entry: Mapping[str, Any], select: tuple[str, str]) -> float:
    """Lower is better: the dev metric (negated for ``max``); without one, the latest evaluation."""
    metric, direction = select
    if metric not in entry:
        return -entry["step"]
    return entry[metric] if direction == "min" else -entry[metric]


def save(objective: Objective, out: Path, name: str, state: dict[str, Any]) -> None:
    """Checkpoint ``out/name``; ``last`` also keeps the optimiser and scheduler."""
    state["objective"] = objective.state_dict()
    optimizers = None
    if name == "last":
        optimizers = {"optimizer": objective.optimizer.state_dict()}
        if objective.scheduler is not None:
            optimizers["scheduler"] = objective.scheduler.state_dict()
    save_checkpoint(out, name, objective.model, objective.tokenizer, state, optimizers)


def warmup_linear(optimizer: Any, warmup: int, steps: int) -> Any:
    """Linear warm-up over ``warmup`` steps, then linear decay to zero at ``steps`` (every parameter group)."""
    import torch

    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / warmup) * max(0.0, 1 - step / steps))


def optimise(objective: Objective, loss: Any, clip: float | None = 1.0) -> None:
    """One update of the objective's model on ``loss``: gradients (norm clipped to ``clip``), optimiser and
    scheduler steps."""
    import torch

    objective.optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if clip is not None:
        torch.nn.utils.clip_grad_norm_(objective.model.parameters(), clip)
    objective.optimizer.step()
    if objective.scheduler is not None:
        objective.scheduler.step()
