"""Distil a teacher into a one-pass student (Salazar et al. 2020, §2.2, §3.6).

The teacher is any scorer of sentences: a masked LM's PLL (the paper's) or a causal LM's log-likelihood. Its scores
(sentence totals and per-token log-probs) come through the score store, so they are computed once and reused. The
student starts from an encoder (by default the teacher's own, where the teacher is one) with a one-output head and
is trained with MSE on standardised targets — the teacher's total per student token (``sentence``; × the student's
token count, which it knows exactly, gives the total) or each token's log-prob (``token``: the teacher's tokenizer
only). A batch holds whole N-best lists, and the dev split keeps each list on one side. Re-ranking compares the
hypotheses of one list, so ``list_weight`` adds the error of each hypothesis's total relative to its list's mean (in
units of the teacher's spread within lists). Adam; after every ``eval_every`` steps the same loss on the dev split
picks the best checkpoint and ``patience`` evaluations without improvement stop training. The run is an objective of
``train.loop``: stopped by ``max_seconds`` (evaluated there), the next run resumes from ``out_dir/last``.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..context import scored_texts, split
from ..engine import load_scorer
from ..errors import ConfigError
from ..scorers.loading import resolve_device
from ..scorers.rows import padded
from ..scorers.segments import pack, rows_batch
from ..scorers.student import LEVELS, readout, student_class, student_inputs
from .batches import list_batches, list_units
from .loop import Limits, Objective, optimise, start_run, train


@dataclass
class DistillConfig:
    teacher: Mapping[str, Any]          # load_scorer options of the teacher (kind pll or ll, model, variant, …)
    out_dir: str
    init: str | None = None             # the student's starting encoder (default: a pll teacher's own model)
    level: str = "sentence"             # sentence | token
    epochs: int = 10
    batch_size: int = 32
    lr: float = 5.0e-5
    eval_every: int = 250
    patience: int = 4
    dev_fraction: float = 0.05
    max_length: int = 128
    list_weight: float = 0.0            # weight of the within-list loss beside the regression of the totals
    max_seconds: float = math.inf
    device: str = "auto"
    seed: int = 0
    progress: bool | None = None
    texts: Sequence[str] = field(default_factory=list)
    nbests: Sequence[Any] = field(default_factory=list)  # N-best lists whose hypotheses are training texts too
    engine: Mapping[str, Any] = field(default_factory=dict)  # engine.* settings the teacher is scored with


def is_dev(text: str, fraction: float) -> bool:
    """A stable split by text hash, so the same sentence is always on the same side."""
    return int(hashlib.sha1(text.encode()).hexdigest()[:8], 16) < fraction * 2**32


@dataclass
class Targets:
    """Normalised texts with their targets per student token, split into train and dev: the teacher's log-probs
    (``token``) or its total spread evenly (``sentence``), so that they sum to the teacher's total either way; and
    the N-best list each hypothesis came from (``lists``: text → list)."""

    train: list[tuple[str, np.ndarray]]
    dev: list[tuple[str, np.ndarray]]
    lists: Mapping[str, str] = field(default_factory=dict)

    def groups(self, pairs: Sequence[tuple[str, np.ndarray]]) -> Any:
        """A group index per text of ``pairs``: texts of one list share one, a text of no list has its own."""
        import torch

        index: dict[Any, int] = {}
        return torch.tensor([index.setdefault(self.lists.get(text, ("alone", i)), len(index))
                             for i, (text, _) in enumerate(pairs)])

    def list_spread(self) -> float:
        """The mean square of the teacher's totals about their list's mean, over the training lists."""
        import torch

        totals = torch.tensor([t.sum() for _, t in self.train], dtype=torch.float64)
        deviation, listed = within_lists(totals, self.groups(self.train))
        return float((deviation[listed] ** 2).mean()) if bool(listed.any()) else 1.0

    def scale(self, level: str) -> tuple[float, float]:
        """Mean and std of the training targets (per-sentence means per token, or all token log-probs)."""
        values = (np.concatenate([t for _, t in self.train]) if level == "token"
                  else np.array([t.mean() for _, t in self.train]))
        return float(values.mean()), float(values.std() or 1.0)


def within_lists(totals: Any, groups: Any) -> tuple[Any, Any]:
    """Each total minus the mean of its group's (a tensor), and which belong to a group of two or more."""
    import torch

    counts = torch.bincount(groups)
    sums = torch.zeros(len(counts), dtype=totals.dtype, device=totals.device).index_add(0, groups, totals)
    return totals - (sums / counts.to(totals.dtype))[groups], counts[groups] >= 2


def listed_inputs(nbests: Sequence[Any], teacher: Any) -> list[tuple[str, str]]:
    """Every hypothesis of ``nbests`` as the teacher reads it (after its context, where it reads one, normalised as
    it normalises), with its list (``source:utterance``)."""
    return [(text, f"{nbest.source}:{utt.id}") for nbest in nbests for text, utt in zip(
        scored_texts(nbest, teacher.context, teacher.normaliser), (utt for utt in nbest for _ in utt.hyps))]


def training_inputs(texts: Sequence[str], nbests: Sequence[Any], teacher: Any) -> list[str]:
    """What the teacher scores and the student learns from: the plain ``texts`` (normalised as the teacher
    normalises) and every hypothesis of ``nbests``."""
    return [*teacher.normalise(texts), *(text for text, _ in listed_inputs(nbests, teacher))]


def teacher_targets(cfg: DistillConfig) -> tuple[Targets, Any, str]:
    """The teacher's scores of the distinct training texts (through its store) as targets per student token, split;
    the teacher; and the encoder the student starts from. A teacher that reads context is learnt from the N-best
    lists' hypotheses after their contexts, which the student then reads too."""
    teacher = load_scorer(**{**cfg.engine, "progress": cfg.progress, **cfg.teacher})
    if teacher.context is not None and not cfg.nbests:
        raise ConfigError(f"task.teacher: a {teacher.kind} teacher reads the utterances before each text: give "
                          "task.hypotheses (N-best lists, whose recordings give each hypothesis its context)")
    init = cfg.init or (teacher.adapter.model_name if teacher.kind == "pll" else None)
    if init is None:
        raise ConfigError(f"task.init: the student of a {teacher.kind} teacher needs an encoder to start from (the "
                          "teacher is none): name one, e.g. task.init=${model.masked.path}")
    lists: dict[str, str] = {}
    for text, key in listed_inputs(cfg.nbests, teacher):
        lists.setdefault(text, key)
    texts = list(dict.fromkeys(t for t in [*teacher.normalise(cfg.texts), *lists] if split(t)[1].strip()))
    if len(texts) < 10:
        raise ConfigError(f"distillation needs at least 10 distinct training texts, got {len(texts)}")
    results = teacher.compute(texts, normalise=False)
    counts = student_token_counts(init, results.texts, context_tokens(teacher))
    pairs = []
    for text, total, tokens, count in zip(results.texts, results.totals, results.tokens, counts):
        if not tokens or not count:
            continue
        if cfg.level == "sentence":
            pairs.append((text, np.full(count, total / count)))
        elif len(tokens) == count:
            pairs.append((text, np.asarray(tokens, dtype=np.float64)))
        else:
            raise ConfigError(f"the student's tokenizer ({init}) splits {text!r} into {count} tokens, the teacher's "
                              f"into {len(tokens)}: a token-level student needs the teacher's tokenizer (or "
                              "task.level=sentence)")
    dev = {text for text, _ in pairs if is_dev(lists.get(text, text), cfg.dev_fraction)}  # a list on one side
    split_pairs = Targets([p for p in pairs if p[0] not in dev], [p for p in pairs if p[0] in dev], lists)
    if not split_pairs.dev or not split_pairs.train:
        raise ConfigError(f"dev_fraction={cfg.dev_fraction} leaves an empty train or dev split of {len(pairs)} texts")
    return split_pairs, teacher, init


def context_tokens(teacher: Any) -> int:
    """How many tokens of context the student reads: as many as its teacher (none without context)."""
    return teacher.context.tokens if teacher.context is not None else 0


def student_token_counts(init: str, texts: Sequence[str], context: int = 0) -> list[int]:
    """How many tokens the student, starting from ``init``, scores in each text (its tokenizer's hypothesis tokens,
    read after ``context`` tokens of its context)."""
    from transformers import AutoTokenizer

    return [len(text.scored) for text in student_inputs(AutoTokenizer.from_pretrained(init), texts, context)]


def dev_scorer(cfg: DistillConfig, tokenizer: Any, model: Any, device: str) -> Any:
    """The student scorer of the model being trained (its predictions of the teacher's scores on dev)."""
    return load_scorer("student", cfg.out_dir, device=device, loaded=(tokenizer, model), progress=False)


class Distillation(Objective):
    """A one-pass student regressing a teacher's (standardised) scores, and with ``list_weight`` their differences
    within a list; the same loss on dev picks the best."""

    name = "distill"
    metrics = ("train_mse", "train_list_mse")
    select = ("dev_loss", "min")
    shown = ("dev_pearson", "dev_list_pearson")
    best_name = "student"

    def __init__(self, cfg: DistillConfig):
        if cfg.level not in LEVELS:
            raise ConfigError(f"task.level must be one of {', '.join(LEVELS)}, not {cfg.level!r}")
        self.cfg, self.seed = cfg, cfg.seed
        self.device = resolve_device(cfg.device)
        self.targets, teacher, self.init = teacher_targets(cfg)
        mean, std = self.targets.scale(cfg.level)
        self.listed, self.loose = list_units([self.targets.lists.get(text) for text, _ in self.targets.train],
                                             cfg.batch_size)
        if cfg.list_weight and not self.listed:
            raise ConfigError(f"task.list_weight={cfg.list_weight}: the within-list loss needs N-best lists to train "
                              "on (task.hypotheses); without them set it to 0")
        self.spread = self.targets.list_spread()
        self.info = {"level": cfg.level, "mean": mean, "std": std, "teacher": teacher.signature,
                     "normaliser": teacher.normaliser.signature,
                     **({"context": teacher.context.to_dict()} if teacher.context is not None else {})}

    def setup(self, resume: Path | None) -> None:
        import torch
        import transformers
        from transformers import AutoTokenizer
        from transformers.utils import logging as hf_logging

        start = str(resume or self.init)
        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()  # a new head is expected: no "newly initialized" warning
        torch.manual_seed(self.cfg.seed)  # the new head's initial weights
        auto = getattr(transformers, student_class(self.cfg.level, self.info.get("context")))
        self.model = auto.from_pretrained(start, num_labels=1).float().to(self.device)
        hf_logging.set_verbosity(verbosity)
        self.model.config.rescorer_student = self.info
        self.tokenizer = AutoTokenizer.from_pretrained(start)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=self.cfg.lr)

    @property
    def steps_per_epoch(self) -> int:
        return len(self.listed) + math.ceil(len(self.loose) / self.cfg.batch_size)

    def predict(self, texts: Sequence[str]) -> tuple[Any, Any]:
        """The standardised outputs read for each text's scored tokens, [n, W], and which are real: the student's
        rows and read-out as it scores (``rescorer.scorers.segments``), each text cut to ``max_length`` ids."""
        import torch

        context = self.info.get("context")
        inputs = [text.cut(self.cfg.max_length) for text in
                  student_inputs(self.tokenizer, texts, context["tokens"] if context else 0)]
        packed = pack(inputs)
        ids, position, attention = rows_batch(packed, np.arange(len(packed.row_start)), self.tokenizer.pad_token_id)
        tensor = lambda array: None if array is None else torch.from_numpy(array).to(self.device)  # noqa: E731
        out = self.model(input_ids=tensor(ids), attention_mask=tensor(attention),
                         position_ids=tensor(position)).logits[..., 0].float()
        columns, start = readout(inputs, packed, self.cfg.level == "sentence")
        index, valid = padded(columns, start, np.array([len(text.scored) for text in inputs]), 0)
        real = torch.from_numpy(np.ones(index.shape, dtype=bool) if valid is None else valid).to(self.device)
        rows = torch.from_numpy(np.maximum(packed.text_row, 0)).to(self.device)
        if out.dim() == 1:  # one text a row, one output
            return out[rows][:, None].expand(index.shape), real
        return out[rows[:, None], torch.from_numpy(index).to(self.device)], real

    def totals(self, values: Any, real: Any) -> Any:
        """The student's predicted total of each text (nats) from its standardised outputs ``predict`` read."""
        return ((values * self.info["std"] + self.info["mean"]) * real).sum(1)

    def squared_errors(self, batch: Sequence[tuple[str, np.ndarray]], outputs: tuple[Any, Any] | None = None
                       ) -> tuple[Any, int]:
        """Sum of squared errors over the batch's targets, and how many targets there were (of the student's
        ``outputs``, by default predicted here)."""
        import torch

        values, real = outputs or self.predict([text for text, _ in batch])
        mean, std = self.info["mean"], self.info["std"]
        if self.cfg.level == "sentence":
            target = torch.tensor([(t.mean() - mean) / std for _, t in batch], dtype=torch.float32)
            read = real[:, 0]
            return ((values[:, 0] - target.to(self.device)) ** 2)[read].sum(), int(read.sum())
        target = torch.zeros(values.shape, dtype=torch.float32)
        for b, (text, t) in enumerate(batch):
            if int(real[b].sum()) != len(t):
                raise ConfigError(f"the student's tokenizer splits {text!r} into {int(real[b].sum())} tokens, the "
                                  f"teacher's into {len(t)}: a token-level student needs the teacher's tokenizer")
            target[b, : len(t)] = torch.as_tensor((t - mean) / std, dtype=torch.float32)
        return ((values - target.to(self.device)) ** 2)[real].sum(), int(real.sum())

    def list_errors(self, batch: Sequence[tuple[str, np.ndarray]], totals: Any) -> tuple[Any, int]:
        """Sum of squared errors of the predicted ``totals`` about their list's mean against the teacher's (in
        units of the teacher's spread within lists), and how many texts of lists of two or more there were."""
        import torch

        groups = self.targets.groups(batch).to(self.device)
        teacher = torch.tensor([t.sum() for _, t in batch], dtype=torch.float32, device=self.device)
        predicted, listed = within_lists(totals, groups)
        expected, _ = within_lists(teacher, groups)
        return ((predicted - expected) ** 2)[listed].sum() / self.spread, int(listed.sum())

    def step(self, index: int) -> dict[str, float]:
        picked = list_batches(index, self.listed, self.loose, self.cfg.batch_size, self.cfg.seed)
        batch = [self.targets.train[i] for i in picked]
        values, real = self.predict([text for text, _ in batch])
        total, count = self.squared_errors(batch, (values, real))
        listed, members = self.list_errors(batch, self.totals(values, real))
        mse, list_mse = total / count, listed / max(members, 1)
        optimise(self, mse + self.cfg.list_weight * list_mse if self.cfg.list_weight else mse, clip=None)
        return {"train_mse": float(mse.detach()), "train_list_mse": float(list_mse.detach())}

    def evaluate(self) -> dict[str, float]:
        """Dev MSE (standardised units), the student's scores against the teacher's on the dev split (Pearson r
        and MAE of the totals; within lists, the relative MSE and r about the list's mean) and the loss trained on."""
        import torch

        dev = self.targets.dev
        with torch.inference_mode():
            errors = [self.squared_errors(dev[i : i + 64]) for i in range(0, len(dev), 64)]
        predicted = np.array(dev_scorer(self.cfg, self.tokenizer, self.model, self.device).score([t for t, _ in dev]))
        teacher = np.array([t.sum() for _, t in dev])
        groups = self.targets.groups(dev)
        (student_within, listed), (teacher_within, _) = (within_lists(torch.from_numpy(x), groups)
                                                         for x in (predicted, teacher))
        x, y = student_within[listed].numpy(), teacher_within[listed].numpy()
        mse = float(sum(e for e, _ in errors)) / sum(n for _, n in errors)
        list_mse = float(((x - y) ** 2).mean() / self.spread) if len(x) else math.nan
        within = self.cfg.list_weight * list_mse if self.cfg.list_weight and len(x) else 0.0  # no dev list: none
        return {"dev_mse": mse, "dev_loss": mse + within,
                "dev_pearson": float(np.corrcoef(predicted, teacher)[0, 1]),
                "dev_mae": float(np.abs(predicted - teacher).mean()), "dev_list_mse": list_mse,
                "dev_list_pearson": float(np.corrcoef(x, y)[0, 1]) if len(x) > 1 else math.nan}

    def counters(self, step: int) -> dict[str, float]:
        return {"epoch": step / self.steps_per_epoch}


def distill(cfg: DistillConfig, objective: Distillation | None = None,
            options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Train (or resume training) a student by regression on the teacher's scores, or by another ``objective``
    (its ``options`` recorded with the run); ``out_dir/student`` is the best checkpoint so far."""
    sizes = {"texts": len(cfg.texts), "nbests": [{"utterances": len(n), "hypotheses": n.num_hypotheses}
                                                 for n in cfg.nbests]}  # the data is recorded by its size
    out = start_run(cfg.out_dir, {**asdict(replace(cfg, texts=[], nbests=[])), **sizes, **(options or {})})
    objective = objective or Distillation(cfg)
    limits = Limits(steps=cfg.epochs * objective.steps_per_epoch, eval_every=cfg.eval_every,
                    max_seconds=cfg.max_seconds, patience=cfg.patience, record_at_stop=True)
    state = train(objective, limits, out, cfg.progress)
    return {**state, "train_texts": len(objective.targets.train), "dev_texts": len(objective.targets.dev),
            "student": str(out / "student"), **{k: v for k, v in objective.info.items() if k != "level"}}
