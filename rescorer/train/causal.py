"""Causal-LM training on in-memory sentences (the small LMs of the PCFG study): next-word cross-entropy on
[BOS] w_1 … w_n [EOS], AdamW with warm-up and linear decay. Every ``eval_every`` steps the dev perplexity
(through the LL scorer) picks ``out_dir/best``; a run stopped by ``until``/``max_seconds``
resumes from ``out_dir/last`` (an objective of ``train.loop``)."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..engine import load_scorer
from ..scorers.loading import resolve_device
from .batches import pad, stream_indices
from .loop import Limits, TokenCounting, optimise, start_run, train, warmup_linear


@dataclass
class CausalConfig:
    init: str                 # a causal LM directory to start from
    out_dir: str
    steps: int = 2000
    batch_size: int = 64
    lr: float = 5e-4
    warmup: int = 100
    weight_decay: float = 0.01
    eval_every: int = 250
    max_length: int = 64      # training sentences are cut to this many tokens
    max_seconds: float = math.inf
    until: int | None = None  # stop after this step (a stage of a longer run); the next run resumes
    device: str = "auto"
    seed: int = 0
    progress: bool | None = None


def dev_scorer(cfg: CausalConfig, tokenizer: Any, model: Any, device: str) -> Any:
    """The LL scorer of the model being trained: each sentence after [BOS], its end not scored, in fp32."""
    return load_scorer("ll", cfg.init, bos="bos", score_eos=False, device=device, dtype="fp32", loaded=(tokenizer, model),
                       progress=False)


class CausalLM(TokenCounting):
    """Next-word training of a causal LM; dev perplexity picks the best checkpoint."""

    name = "causal LM"
    select = ("dev_ppl", "min")

    def __init__(self, cfg: CausalConfig, texts: Sequence[str], dev_texts: Sequence[str] = ()):
        self.cfg, self.seed = cfg, cfg.seed
        self.texts, self.dev_texts = list(texts), list(dev_texts)
        self.device = resolve_device(cfg.device)

    def setup(self, resume: Path | None) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        source = str(resume or self.cfg.init)
        self.tokenizer = AutoTokenizer.from_pretrained(source)
        self.model = AutoModelForCausalLM.from_pretrained(source).to(self.device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=self.cfg.lr, weight_decay=self.cfg.weight_decay)
        self.scheduler = warmup_linear(self.optimizer, self.cfg.warmup, self.cfg.steps)

    def encode(self, texts: Sequence[str]) -> tuple[Any, Any, Any]:
        """(input ids, attention mask, labels): [BOS] words [EOS], padded; labels −100 on padding."""
        import torch

        tok = self.tokenizer
        rows = [[tok.bos_token_id, *ids[: self.cfg.max_length], tok.eos_token_id]
                for ids in tok(list(texts), add_special_tokens=False)["input_ids"]]
        ids, mask = pad(rows, tok.pad_token_id)
        labels = np.where(mask, ids, -100)
        return (torch.from_numpy(ids).to(self.device), torch.from_numpy(mask.astype(np.int64)).to(self.device),
                torch.from_numpy(labels).to(self.device))

    def step(self, index: int) -> dict[str, float]:
        picked = stream_indices(index, len(self.texts), self.cfg.batch_size, self.cfg.seed)
        ids, mask, labels = self.encode([self.texts[i] for i in picked])
        loss = self.model(input_ids=ids, attention_mask=mask, labels=labels).loss
        optimise(self, loss)
        self.tokens += int(mask.sum())
        return {"train_loss": float(loss.detach())}

    def evaluate(self) -> dict[str, float]:
        """Perplexity of the dev words (the end token not counted) through the LL scorer."""
        if not self.dev_texts:
            return {}
        ppl = dev_scorer(self.cfg, self.tokenizer, self.model, self.device).perplexity(self.dev_texts)
        return {"dev_ppl": ppl.token_level}


def train_causal(cfg: CausalConfig, texts: Sequence[str], dev_texts: Sequence[str] = ()) -> dict[str, Any]:
    """Run (or resume) causal-LM training; returns the state with the learning curve."""
    start_run(cfg.out_dir, asdict(cfg))
    limits = Limits(steps=cfg.steps, eval_every=cfg.eval_every, until=cfg.until, max_seconds=cfg.max_seconds)
    return train(CausalLM(cfg, texts, dev_texts), limits, cfg.out_dir, cfg.progress)
