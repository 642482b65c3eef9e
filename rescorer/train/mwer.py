"""Discriminative training of a maskless student (RescoreBERT, Xu et al. 2022): minimum word error rate over
each N-best list, plus β · the PLL regression loss.

For one list with base scores b_i (the toolkit's column, e.g. ESPnet ``score``) and the student's PLLs s_i:
p_i = softmax_i(b_i + a · s_i), a a learnable scale; L_MWER = Σ_i p_i (E_i − Ē), E_i the word errors of h_i
against the reference and Ē their mean over the list; L = L_MWER + β · MSE(student, teacher), RescoreBERT's
combined objective (β = 0 trains on word errors alone; the regression term keeps the student a PLL estimate).
The lists come only from the training sets given (their references are read); a held-out part of them, split by
utterance id, selects the checkpoint by its rescored WER (b + a · s) — never the sets tuned or reported on.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import ConfigError
from ..metrics import WER
from ..normalise import Normaliser
from ..types import NBest
from .batches import epoch_indices
from .distill import Distillation, DistillConfig, dev_scorer, distill, is_dev


@dataclass(frozen=True)
class Lists:
    """N-best lists ready for the MWER loss: normalised hypotheses, base scores, word errors, reference words."""

    ids: list[str]
    texts: list[list[str]]
    base: list[np.ndarray]
    errors: list[np.ndarray]
    ref_words: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)

    def pick(self, rows: Sequence[int]) -> "Lists":
        return Lists([self.ids[i] for i in rows], [self.texts[i] for i in rows], [self.base[i] for i in rows],
                     [self.errors[i] for i in rows], self.ref_words[list(rows)])


def nbest_lists(nbests: Sequence[NBest], base: str, normaliser: Normaliser) -> Lists:
    """Every utterance with hypotheses and a reference, its texts as the teacher scores them, its ``base`` column."""
    ids, texts, scores, errors, words = [], [], [], [], []
    metric = WER()
    for nbest in nbests:
        for utt in nbest:
            if not utt.hyps or utt.ref is None:
                continue
            if any(base not in h.scores for h in utt.hyps):
                raise ConfigError(f"{utt.origin or nbest.source}: utterance {utt.id!r} has no column {base!r}")
            stats = metric.segment_stats([utt.ref] * len(utt.hyps), [h.text for h in utt.hyps])
            ids.append(f"{nbest.source}:{utt.id}")
            texts.append([normaliser(h.text) for h in utt.hyps])
            scores.append(np.array([h.scores[base] for h in utt.hyps], dtype=np.float64))
            errors.append(stats[:, 0].astype(np.float64))
            words.append(int(stats[0, 1]))
    if len(ids) < 4:
        raise ConfigError(f"MWER training needs N-best lists with references; found {len(ids)} usable utterances")
    return Lists(ids, texts, scores, errors, np.array(words))


@dataclass
class MWERConfig:
    """What the MWER objective adds to distillation: the lists, the base column, β and the scale's start."""

    lists: Lists
    beta: float = 0.1            # weight of the PLL regression loss (RescoreBERT's combined objective)
    scale: float = 0.3           # the student's scale a in softmax(b + a·s) at the start (learnt)
    scale_lr: float = 1e-2
    lists_per_step: int = 8
    held_fraction: float = 0.1   # lists held out (by utterance id) to select checkpoints on


class MWERDistillation(Distillation):
    """A student trained on word errors of N-best lists (plus β · the PLL regression); held-out WER picks the best."""

    name = "mwer"
    metrics = ("train_loss", "train_mwer", "train_mse")
    select = ("held_wer", "min")
    shown = ("held_wer", "scale")

    def __init__(self, cfg: DistillConfig, mwer: MWERConfig):
        held = [i for i, utt in enumerate(mwer.lists.ids) if is_dev(utt, mwer.held_fraction)]
        train = [i for i in range(len(mwer.lists)) if i not in set(held)]
        if not held or not train:
            raise ConfigError(f"held_fraction={mwer.held_fraction} leaves no training or held-out lists")
        self.mwer, self.lists, self.held = mwer, mwer.lists.pick(train), mwer.lists.pick(held)
        texts = [t for group in mwer.lists.texts for t in group if t]
        super().__init__(replace(cfg, texts=[*texts, *cfg.texts]))
        self.teacher_tokens = {text: t for text, t in self.targets.train + self.targets.dev}
        self.saved_scale = mwer.scale

    def setup(self, resume: Path | None) -> None:
        import torch

        super().setup(resume)
        self.scale = torch.nn.Parameter(torch.tensor(float(self.saved_scale), device=self.device))
        self.optimizer.add_param_group({"params": [self.scale], "lr": self.mwer.scale_lr})

    @property
    def steps_per_epoch(self) -> int:
        return -(-len(self.lists) // self.mwer.lists_per_step)

    def student_pll(self, texts: list[str]) -> Any:
        """The student's PLL estimate of each text (nats): its standardised output × std + mean, × scored tokens;
        −inf for a text with nothing to score (as the student scorer says)."""
        import torch

        pll = torch.full((len(texts),), -torch.inf, device=self.device)
        rows = [i for i, t in enumerate(texts) if t in self.teacher_tokens]
        if rows:
            totals = self.totals(*self.predict([texts[i] for i in rows]))
            pll = pll.index_put((torch.tensor(rows, device=self.device),), totals)
        return pll

    def step(self, index: int) -> dict[str, float]:
        import torch

        rows = epoch_indices(index, len(self.lists), self.mwer.lists_per_step, self.cfg.seed)
        batch = self.lists.pick(rows)
        flat = [t for group in batch.texts for t in group]
        pll = self.student_pll(flat)
        mwer, start = 0.0, 0
        for base, errors in zip(batch.base, batch.errors):
            stop = start + len(base)
            logits = torch.as_tensor(base, dtype=torch.float32, device=self.device) + self.scale * pll[start:stop]
            e = torch.as_tensor(errors, dtype=torch.float32, device=self.device)
            mwer = mwer + (torch.softmax(logits, 0) * (e - e.mean())).sum()
            start = stop
        mwer = mwer / len(batch)
        known = [(t, self.teacher_tokens[t]) for t in dict.fromkeys(flat) if t in self.teacher_tokens]
        total, count = self.squared_errors(known)
        mse = total / max(count, 1)
        loss = mwer + self.mwer.beta * mse
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return {"train_loss": float(loss.detach()), "train_mwer": float(mwer.detach()), "train_mse": float(mse.detach())}

    def evaluate(self) -> dict[str, float]:
        """The held-out lists' WER (%) rescored with b + a·s (and with b alone), plus distillation's dev metrics."""
        scorer = dev_scorer(self.cfg, self.tokenizer, self.model, self.device)
        scale = float(self.scale.detach())
        errors = rescored = 0.0
        for base, texts, e in zip(self.held.base, self.held.texts, self.held.errors):
            student = np.array(scorer.compute(texts, normalise=False).totals)
            rescored += e[int(np.argmax(np.where(np.isfinite(student), base + scale * student, -np.inf)))]
            errors += e[0]
        words = max(int(self.held.ref_words.sum()), 1)
        return {**super().evaluate(), "held_wer": float(100 * rescored / words),
                "held_base_wer": float(100 * errors / words), "scale": scale}

    def state_dict(self) -> dict[str, Any]:
        scale = float(self.scale.detach())
        self.model.config.rescorer_student = {**self.info, "mwer_scale": scale}
        return {"scale": scale}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if "scale" in state:
            self.scale.data.fill_(float(state["scale"]))


def mwer_distill(cfg: DistillConfig, mwer: MWERConfig) -> dict[str, Any]:
    """Train (or resume) a student on N-best word errors; ``out_dir/student`` is the best by held-out WER."""
    options = {"objective": "mwer", "beta": mwer.beta, "scale": mwer.scale, "lists": len(mwer.lists)}
    return distill(cfg, MWERDistillation(cfg, mwer), options)
