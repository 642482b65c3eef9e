"""Distil a PLL teacher into a one-pass student (spec §1.3; Salazar §2.2, §3.6).

The teacher's PLLs (sentence totals and per-token log-probs) come through the score store, so they are
computed once and reused. The student starts from an encoder (by default the teacher's own) with a
one-output head and is trained with MSE on standardised targets — the sentence's mean PLL per token
(``sentence``; × the token count, which the student knows exactly, gives PLL) or each token's log-prob
(``token``). Adam; after every ``eval_every`` steps the dev split's MSE picks the best checkpoint and
``patience`` evaluations without improvement stop training. A run stops after ``max_seconds`` and the
next run resumes from ``out_dir/last``.
"""
from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
from tqdm.auto import tqdm

from ..engine import Engine, load_scorer
from ..errors import ConfigError
from ..io.common import write_text
from ..scorers.loading import resolve_device
from ..scorers.student import LEVELS, StudentScorer
from .checkpoint import load_checkpoint, save_checkpoint


@dataclass
class DistillConfig:
    teacher: Mapping[str, Any]          # load_scorer options of the PLL teacher (kind pll, model, variant, …)
    out_dir: str
    init: str | None = None             # the student's starting encoder (default: the teacher's model)
    level: str = "sentence"             # sentence | token
    epochs: int = 10
    batch_size: int = 32
    lr: float = 5.0e-5
    eval_every: int = 250
    patience: int = 4
    dev_fraction: float = 0.05
    max_length: int = 128
    max_seconds: float = math.inf
    device: str = "auto"
    seed: int = 0
    progress: bool | None = None
    texts: Sequence[str] = field(default_factory=list)
    engine: Mapping[str, Any] = field(default_factory=dict)  # engine.* settings the teacher is scored with


def is_dev(text: str, fraction: float) -> bool:
    """A stable split by text hash, so the same sentence is always on the same side."""
    return int(hashlib.sha1(text.encode()).hexdigest()[:8], 16) < fraction * 2**32


@dataclass
class Targets:
    """Normalised texts with the teacher's per-token log-probs, split into train and dev."""

    train: list[tuple[str, np.ndarray]]
    dev: list[tuple[str, np.ndarray]]

    def scale(self, level: str) -> tuple[float, float]:
        """Mean and std of the training targets (per-sentence means per token, or all token log-probs)."""
        values = (np.concatenate([t for _, t in self.train]) if level == "token"
                  else np.array([t.mean() for _, t in self.train]))
        return float(values.mean()), float(values.std() or 1.0)


def teacher_targets(cfg: DistillConfig) -> tuple[Targets, Any]:
    teacher = load_scorer(**{**cfg.engine, "progress": cfg.progress, **cfg.teacher})
    if teacher.kind != "pll":
        raise ConfigError(f"task.teacher must be a masked-LM PLL scorer (kind pll), not {teacher.kind!r}")
    texts = list(dict.fromkeys(t for t in cfg.texts if t.strip()))
    if len(texts) < 10:
        raise ConfigError(f"distillation needs at least 10 distinct training texts, got {len(texts)}")
    results = teacher.compute(texts)
    pairs = [(text, np.asarray(tokens, dtype=np.float64)) for text, tokens in zip(results.texts, results.tokens)
             if tokens]
    split = Targets([p for p in pairs if not is_dev(p[0], cfg.dev_fraction)],
                    [p for p in pairs if is_dev(p[0], cfg.dev_fraction)])
    if not split.dev or not split.train:
        raise ConfigError(f"dev_fraction={cfg.dev_fraction} leaves an empty train or dev split of {len(pairs)} texts")
    return split, teacher


class Distiller:
    """One distillation run: targets, student, optimiser and the resumable state."""

    def __init__(self, cfg: DistillConfig):
        import torch
        import transformers
        from transformers import AutoTokenizer

        if cfg.level not in LEVELS:
            raise ConfigError(f"task.level must be one of {', '.join(LEVELS)}, not {cfg.level!r}")
        self.cfg, self.out = cfg, Path(cfg.out_dir)
        self.device = resolve_device(cfg.device)
        self.targets, teacher = teacher_targets(cfg)
        mean, std = self.targets.scale(cfg.level)
        self.info = {"level": cfg.level, "mean": mean, "std": std, "teacher": teacher.signature,
                     "normaliser": teacher.adapter.normaliser.signature}
        resume = load_checkpoint(self.out, device=self.device)
        start = str(self.out / "last") if resume else (cfg.init or teacher.adapter.model_name)
        auto = getattr(transformers, LEVELS[cfg.level])
        from transformers.utils import logging as hf_logging

        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()  # a new head is expected: no "newly initialized" warning
        torch.manual_seed(cfg.seed)  # the new head's initial weights
        self.model = auto.from_pretrained(start, num_labels=1).float().to(self.device)
        hf_logging.set_verbosity(verbosity)
        self.model.config.rescorer_student = self.info
        self.tokenizer = AutoTokenizer.from_pretrained(start)
        del teacher
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=cfg.lr)
        self.state = {"step": 0, "best_dev_mse": math.inf, "best_step": None, "stale": 0, "curve": []}
        if resume:
            self.state, saved = resume
            self.optimizer.load_state_dict(saved["optimizer"])

    @property
    def steps_per_epoch(self) -> int:
        return math.ceil(len(self.targets.train) / self.cfg.batch_size)

    def encode(self, batch: Sequence[tuple[str, np.ndarray]]) -> tuple[Any, Any, Any, Any]:
        """Input ids, attention mask, standardised targets and the target mask (token level) of a batch."""
        import torch

        enc = self.tokenizer([t for t, _ in batch], padding=True, truncation=True, max_length=self.cfg.max_length,
                             return_special_tokens_mask=True, return_tensors="pt")
        scored = (enc["special_tokens_mask"] == 0) & (enc["attention_mask"] == 1)
        mean, std = self.info["mean"], self.info["std"]
        if self.cfg.level == "sentence":
            target = torch.tensor([(t.mean() - mean) / std for _, t in batch], dtype=torch.float32)
        else:
            target = torch.zeros(scored.shape, dtype=torch.float32)
            for b, (_, t) in enumerate(batch):
                where = scored[b].nonzero()[:, 0]
                if len(where) != len(t):
                    raise ConfigError(f"the student's tokenizer splits {batch[b][0]!r} into {len(where)} tokens, "
                                      f"the teacher's into {len(t)}: a token-level student needs the teacher's tokenizer")
                target[b, where] = torch.as_tensor((t - mean) / std, dtype=torch.float32)
        return (enc["input_ids"].to(self.device), enc["attention_mask"].to(self.device), target.to(self.device),
                scored.to(self.device))

    def squared_errors(self, batch: Sequence[tuple[str, np.ndarray]]) -> tuple[Any, int]:
        """Sum of squared errors over the batch's targets, and how many targets there were."""
        ids, attention, target, scored = self.encode(batch)
        out = self.model(input_ids=ids, attention_mask=attention).logits[..., 0].float()
        if self.cfg.level == "sentence":
            return ((out - target) ** 2).sum(), len(batch)
        return ((out - target) ** 2)[scored].sum(), int(scored.sum())

    def step(self) -> float:
        import torch

        epoch, index = divmod(self.state["step"], self.steps_per_epoch)
        order = np.random.default_rng([self.cfg.seed, epoch]).permutation(len(self.targets.train))
        picked = order[index * self.cfg.batch_size : (index + 1) * self.cfg.batch_size]
        torch.manual_seed(self.cfg.seed * 1_000_003 + self.state["step"])  # dropout: the same after a resume
        total, count = self.squared_errors([self.targets.train[i] for i in picked])
        loss = total / count
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.state["step"] += 1
        return float(loss.detach())

    def evaluate(self) -> dict[str, float]:
        """Dev MSE (standardised units) and the student's PLL against the teacher's on the dev split."""
        import torch

        dev = self.targets.dev
        self.model.eval()
        with torch.inference_mode():
            errors = [self.squared_errors(dev[i : i + 64]) for i in range(0, len(dev), 64)]
        scorer = Engine(progress=False).bind(StudentScorer(self.cfg.out_dir, device=self.device,
                                                           loaded=(self.tokenizer, self.model)))
        predicted = np.array(scorer.score([t for t, _ in dev]))
        self.model.train()
        teacher = np.array([t.sum() for _, t in dev])
        return {"dev_mse": float(sum(e for e, _ in errors)) / sum(n for _, n in errors),
                "dev_pearson": float(np.corrcoef(predicted, teacher)[0, 1]),
                "dev_mae": float(np.abs(predicted - teacher).mean())}

    def record(self, train_loss: float) -> dict[str, Any]:
        """Evaluate, log a point of the curve, keep the best checkpoint by dev MSE, count stale evaluations."""
        entry = {"step": self.state["step"], "epoch": self.state["step"] / self.steps_per_epoch,
                 "train_mse": train_loss, **self.evaluate()}
        self.state["curve"].append(entry)
        if entry["dev_mse"] < self.state["best_dev_mse"]:
            self.state.update(best_dev_mse=entry["dev_mse"], best_step=self.state["step"], stale=0)
            save_checkpoint(self.out, "student", self.model, self.tokenizer, self.state)
        else:
            self.state["stale"] += 1
        save_checkpoint(self.out, "last", self.model, self.tokenizer, self.state,
                        {"optimizer": self.optimizer.state_dict()})
        return entry

    @property
    def finished(self) -> bool:
        return (self.state["step"] >= self.cfg.epochs * self.steps_per_epoch
                or self.state["stale"] >= self.cfg.patience)

    def run(self) -> dict[str, Any]:
        self.model.train()
        start = time.perf_counter()
        if not self.state["curve"]:
            self.record(math.nan)
        losses: list[float] = []
        total = self.cfg.epochs * self.steps_per_epoch
        with tqdm(total=total, initial=self.state["step"], desc="distill", unit="step",
                  disable=None if self.cfg.progress is None else not self.cfg.progress) as bar:
            while not self.finished and time.perf_counter() - start < self.cfg.max_seconds:
                losses.append(self.step())
                bar.update(1)
                if self.state["step"] % self.cfg.eval_every == 0 or self.state["step"] == total:
                    entry = self.record(float(np.mean(losses)))
                    bar.set_postfix(dev_mse=f"{entry['dev_mse']:.3f}", r=f"{entry['dev_pearson']:.3f}")
                    losses = []
        if losses:
            self.record(float(np.mean(losses)))
        return self.state


def distill(cfg: DistillConfig) -> dict[str, Any]:
    """Train (or resume training) a student; ``out_dir/student`` is the best checkpoint so far."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    options = {k: v for k, v in asdict(cfg).items() if k != "texts"}
    write_text(out / "config.json", json.dumps({**options, "texts": len(cfg.texts)}, indent=1, default=str) + "\n")
    distiller = Distiller(cfg)
    state = distiller.run()
    return {**state, "train_texts": len(distiller.targets.train), "dev_texts": len(distiller.targets.dev),
            "student": str(out / "student"), **{k: v for k, v in distiller.info.items() if k != "level"}}
