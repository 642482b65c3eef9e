"""Domain adaptation (Salazar et al. 2020, §3.5): continue masked-LM training of an encoder on target-domain text.

Standard BERT masking (15% of tokens; 80% [MASK], 10% random, 10% kept), the LM head applied only at the
masked positions, AdamW with warm-up and linear decay, bf16 autocast on GPU. Every ``eval_every`` steps the
dev pseudo-perplexity (our PLL scorer) picks the best checkpoint. The run is an objective of
``train.loop``: stopped by ``until``/``max_seconds``, the next run resumes from ``out_dir/last``.
An encoder without an MLM head (e.g. MiniLM sentence encoders) gets a fresh head tied to its word embeddings.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..engine import load_scorer
from ..errors import ConfigError
from ..scorers.loading import resolve_device, resolve_dtype
from ..scorers.masked import HEADS
from .batches import pad, stream_indices
from .corpus import load_segments
from .loop import Limits, TokenCounting, optimise, start_run, train, warmup_linear


@dataclass
class AdaptConfig:
    encoder: str
    train: Sequence[str]
    out_dir: str
    dev_texts: Sequence[str] = field(default_factory=list)
    steps: int = 20000
    batch_size: int = 128
    max_length: int = 64
    lr: float = 2e-4
    head_lr: float = 1e-3
    warmup: int = 500
    weight_decay: float = 0.01
    mask_prob: float = 0.15
    freeze_embeddings: bool = True
    eval_every: int = 500
    max_seconds: float = math.inf
    until: int | None = None  # stop after this step (a stage of a longer run); the next run resumes
    device: str = "auto"
    dtype: str = "auto"
    seed: int = 0
    variant: str = "word_l2r"
    progress: bool | None = None


def masked_lm_from_encoder(path: str) -> tuple[Any, Any]:
    """(tokenizer, ``*ForMaskedLM``): the checkpoint's own head if it has one, else a new head tied to its
    word embeddings (decoder = embeddingsᵀ, fresh transform and bias)."""
    from transformers import AutoConfig, AutoModel, AutoModelForMaskedLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    config = AutoConfig.from_pretrained(path)
    if any(a.endswith("ForMaskedLM") for a in config.architectures or []):
        return tokenizer, AutoModelForMaskedLM.from_pretrained(path).float()
    config.architectures = None
    config.tie_word_embeddings = True
    model = AutoModelForMaskedLM.from_config(config).float()  # trained in fp32 (autocast on GPU)
    encoder = AutoModel.from_pretrained(path)
    state = {k: v for k, v in encoder.state_dict().items() if not k.startswith("pooler.")}
    missing, unexpected = model.base_model.load_state_dict(state, strict=False)
    if unexpected or any(not k.startswith("pooler.") for k in missing):
        raise ConfigError(f"encoder {path!r} does not fit {type(model).__name__}: missing {missing}, unexpected {unexpected}")
    model.tie_weights()
    return tokenizer, model


def mask_batch(ids: np.ndarray, special: np.ndarray, mask_id: int, vocab: int, prob: float,
               rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(masked input ids, [row, col] of the masked positions, their original ids); at least one per row."""
    choose = (rng.random(ids.shape) < prob) & ~special
    rows_without = np.flatnonzero(~choose.any(1) & (~special).any(1))
    for r in rows_without:
        choose[r, rng.choice(np.flatnonzero(~special[r]))] = True
    where = np.argwhere(choose)
    labels = ids[choose]
    inputs = ids.copy()
    fate = rng.random(len(where))
    inputs[where[fate < 0.8, 0], where[fate < 0.8, 1]] = mask_id
    swap = (fate >= 0.8) & (fate < 0.9)
    inputs[where[swap, 0], where[swap, 1]] = rng.integers(0, vocab, swap.sum())
    return inputs, where, labels


def dev_scorer(cfg: AdaptConfig, tokenizer: Any, model: Any, device: str) -> Any:
    """The PLL scorer of the model being trained (dev pseudo-perplexity)."""
    return load_scorer("pll", cfg.encoder, variant=cfg.variant, device=device, loaded=(tokenizer, model),
                       progress=False)


class Adaptation(TokenCounting):
    """Masked-LM training of an encoder; dev pseudo-perplexity picks the best checkpoint."""

    name = "adapt"
    metrics = ("train_loss", "masked_accuracy")
    select = ("dev_word_pppl", "min")
    shown = ("train_loss", "masked_accuracy")

    def __init__(self, cfg: AdaptConfig, texts: Sequence[str] | None = None):
        """``texts``: the training sentences as they are (default: ``cfg.train`` files cut into segments)."""
        self.cfg, self.seed = cfg, cfg.seed
        self.device = resolve_device(cfg.device)
        self.dtype = resolve_dtype(cfg.dtype, self.device)
        self.texts = list(texts) if texts is not None else load_segments(cfg.train, seed=cfg.seed)

    def setup(self, resume: Path | None) -> None:
        import torch

        cfg = self.cfg
        self.tokenizer, self.model = masked_lm_from_encoder(str(resume or cfg.encoder))
        self.head = HEADS.get(type(self.model).__name__)
        if self.head is None:
            raise ConfigError(f"domain adaptation supports {', '.join(HEADS)}, not {type(self.model).__name__}")
        self.model.to(self.device)
        if cfg.freeze_embeddings:
            self.model.get_input_embeddings().weight.requires_grad_(False)
        prefix = self.model.base_model_prefix
        trained = [(n, p) for n, p in self.model.named_parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW([{"params": [p for n, p in trained if n.startswith(prefix)], "lr": cfg.lr},
                                            {"params": [p for n, p in trained if not n.startswith(prefix)],
                                             "lr": cfg.head_lr}], weight_decay=cfg.weight_decay)
        self.scheduler = warmup_linear(self.optimizer, cfg.warmup, cfg.steps)

    def batch(self, step: int) -> tuple[np.ndarray, np.ndarray]:
        """Token ids and special-token mask (padding included) of the batch at ``step``."""
        picked = stream_indices(step, len(self.texts), self.cfg.batch_size, self.cfg.seed)
        enc = self.tokenizer([self.texts[i] for i in picked], truncation=True, max_length=self.cfg.max_length,
                             return_special_tokens_mask=True)
        ids, real = pad(enc["input_ids"], self.tokenizer.pad_token_id)
        special = pad(enc["special_tokens_mask"], 1)[0].astype(bool) | ~real
        return ids, special

    def step(self, index: int) -> dict[str, float]:
        import torch
        import torch.nn.functional as F

        ids, special = self.batch(index)
        rng = np.random.default_rng([self.cfg.seed, index])
        inputs, where, labels = mask_batch(ids, special, self.tokenizer.mask_token_id, len(self.tokenizer),
                                           self.cfg.mask_prob, rng)
        attention = torch.from_numpy((ids != self.tokenizer.pad_token_id).astype(np.int64)).to(self.device)
        rows, cols = (torch.from_numpy(where[:, k]).to(self.device) for k in (0, 1))
        target = torch.from_numpy(labels).to(self.device)
        with torch.autocast(self.device.split(":")[0], dtype=self.dtype, enabled=self.dtype != torch.float32):
            hidden = self.model.base_model(input_ids=torch.from_numpy(inputs).to(self.device),
                                           attention_mask=attention)[0]
            logits = self.head(self.model, hidden[rows, cols])
        loss = F.cross_entropy(logits.float(), target)
        optimise(self, loss)
        self.tokens += int(attention.sum())
        accuracy = (logits.argmax(-1) == target).float().mean()
        return {"train_loss": float(loss.detach()), "masked_accuracy": float(accuracy), "weight": len(labels)}

    def evaluate(self) -> dict[str, float]:
        """Dev token- and word-level pseudo-perplexity through the PLL scorer."""
        if not self.cfg.dev_texts:
            return {}
        ppl = dev_scorer(self.cfg, self.tokenizer, self.model, self.device).perplexity(list(self.cfg.dev_texts))
        return {"dev_token_pppl": ppl.token_level, "dev_word_pppl": ppl.word_level}


def adapt(cfg: AdaptConfig, texts: Sequence[str] | None = None) -> dict[str, Any]:
    """Run (or resume) adaptation (on ``texts`` if given, else on ``cfg.train``); returns the state with the
    learning curve."""
    start_run(cfg.out_dir, asdict(cfg))
    limits = Limits(steps=cfg.steps, eval_every=cfg.eval_every, until=cfg.until, max_seconds=cfg.max_seconds)
    return train(Adaptation(cfg, texts), limits, cfg.out_dir, cfg.progress)
