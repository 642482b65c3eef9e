"""Domain adaptation (spec §5, Salazar §3.5): continue masked-LM training of an encoder on target-domain text.

Standard BERT masking (15% of tokens; 80% [MASK], 10% random, 10% kept), the LM head applied only at the
masked positions, AdamW with warm-up and linear decay, bf16 autocast on GPU. Every ``eval_every`` steps the
dev pseudo-perplexity (spec §1.5, our PLL scorer) picks the best checkpoint. A run stops after
``max_seconds`` and the next run resumes from ``out_dir/last`` (weights, optimiser, step, data position).
An encoder without an MLM head (e.g. MiniLM sentence encoders) gets a fresh head tied to its word embeddings.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from tqdm.auto import tqdm

from ..engine import Engine
from ..errors import ConfigError
from ..io.common import write_text
from ..scorers.loading import resolve_device, resolve_dtype
from ..scorers.masked import HEADS, MaskedLMScorer
from .checkpoint import load_checkpoint, save_checkpoint
from .corpus import load_segments


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


class Adapter:
    """One adaptation run: data, model, optimiser and the resumable state."""

    def __init__(self, cfg: AdaptConfig, texts: Sequence[str] | None = None):
        """``texts``: the training sentences as they are (default: ``cfg.train`` files cut into segments)."""
        import torch

        self.cfg, self.out = cfg, Path(cfg.out_dir)
        self.device = resolve_device(cfg.device)
        self.dtype = resolve_dtype(cfg.dtype, self.device)
        self.texts = list(texts) if texts is not None else load_segments(cfg.train, seed=cfg.seed)
        resume = load_checkpoint(self.out, device=self.device)
        self.tokenizer, self.model = masked_lm_from_encoder(str(self.out / "last") if resume else cfg.encoder)
        self.head = HEADS.get(type(self.model).__name__)
        if self.head is None:
            raise ConfigError(f"domain adaptation supports {', '.join(HEADS)}, not {type(self.model).__name__}")
        self.model.to(self.device)
        embeddings = self.model.get_input_embeddings().weight
        if cfg.freeze_embeddings:
            embeddings.requires_grad_(False)
        head_params = [p for n, p in self.model.named_parameters()
                       if not n.startswith(self.model.base_model_prefix) and p.requires_grad]
        body_params = [p for n, p in self.model.named_parameters()
                       if n.startswith(self.model.base_model_prefix) and p.requires_grad]
        self.optimizer = torch.optim.AdamW([{"params": body_params, "lr": cfg.lr},
                                            {"params": head_params, "lr": cfg.head_lr}],
                                           weight_decay=cfg.weight_decay)
        schedule = lambda step: min(1.0, (step + 1) / cfg.warmup) * max(0.0, 1 - step / cfg.steps)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, [schedule, schedule])
        self.state = {"step": 0, "tokens": 0, "best_pppl": math.inf, "best_step": None, "curve": []}
        if resume:
            self.state, saved = resume
            self.optimizer.load_state_dict(saved["optimizer"])
            self.scheduler.load_state_dict(saved["scheduler"])

    # ---- data
    def batch(self, step: int) -> tuple[np.ndarray, np.ndarray]:
        """Token ids and special-token mask of the batch at ``step`` (a fixed permutation per epoch)."""
        n, size = len(self.texts), self.cfg.batch_size
        epoch, start = divmod(step * size, n)
        order = np.random.default_rng(self.cfg.seed + epoch).permutation(n)
        picked = [self.texts[i] for i in order[start : start + size]]
        enc = self.tokenizer(picked, truncation=True, max_length=self.cfg.max_length, padding=True,
                             return_special_tokens_mask=True, return_tensors="np")
        special = enc["special_tokens_mask"].astype(bool) | (enc["attention_mask"] == 0)
        return enc["input_ids"], special

    # ---- one step
    def step(self) -> tuple[float, float, int]:
        import torch
        import torch.nn.functional as F

        ids, special = self.batch(self.state["step"])
        rng = np.random.default_rng([self.cfg.seed, self.state["step"]])
        torch.manual_seed(self.cfg.seed * 1_000_003 + self.state["step"])  # dropout: the same after a resume
        inputs, where, labels = mask_batch(ids, special, self.tokenizer.mask_token_id, len(self.tokenizer),
                                           self.cfg.mask_prob, rng)
        attention = torch.from_numpy((ids != self.tokenizer.pad_token_id).astype(np.int64)).to(self.device)
        inputs_t = torch.from_numpy(inputs).to(self.device)
        rows, cols = (torch.from_numpy(where[:, k]).to(self.device) for k in (0, 1))
        target = torch.from_numpy(labels).to(self.device)
        with torch.autocast(self.device.split(":")[0], dtype=self.dtype, enabled=self.dtype != torch.float32):
            hidden = self.model.base_model(input_ids=inputs_t, attention_mask=attention)[0]
            logits = self.head(self.model, hidden[rows, cols])
        loss = F.cross_entropy(logits.float(), target)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.scheduler.step()
        accuracy = (logits.argmax(-1) == target).float().mean()
        self.state["step"] += 1
        self.state["tokens"] += int(attention.sum())
        return float(loss.detach()), float(accuracy), len(labels)

    # ---- evaluation and checkpoints
    def dev_pppl(self) -> dict[str, float]:
        if not self.cfg.dev_texts:
            return {}
        self.model.eval()
        scorer = Engine(progress=False).bind(MaskedLMScorer(self.cfg.encoder, variant=self.cfg.variant,
                                                            device=self.device, loaded=(self.tokenizer, self.model)))
        ppl = scorer.perplexity(list(self.cfg.dev_texts))
        self.model.train()
        return {"dev_token_pppl": ppl.token_level, "dev_word_pppl": ppl.word_level}

    def save(self, name: str) -> None:
        optimizer = None
        if name == "last":
            optimizer = {"optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict()}
        save_checkpoint(self.out, name, self.model, self.tokenizer, self.state, optimizer)

    def run(self) -> dict[str, Any]:
        self.model.train()
        start = time.perf_counter()
        if self.state["step"] == 0 and not self.state["curve"]:
            self.record(math.nan, math.nan)
        window: list[tuple[float, float, int]] = []
        with tqdm(total=self.cfg.steps, initial=self.state["step"], desc="adapt", unit="step",
                  disable=None if self.cfg.progress is None else not self.cfg.progress) as bar:
            last = min(self.cfg.steps, self.cfg.until or self.cfg.steps)
            while self.state["step"] < last and time.perf_counter() - start < self.cfg.max_seconds:
                window.append(self.step())
                bar.update(1)
                if self.state["step"] % self.cfg.eval_every == 0 or self.state["step"] == self.cfg.steps:
                    masked = sum(w[2] for w in window)
                    loss = sum(w[0] * w[2] for w in window) / masked
                    accuracy = sum(w[1] * w[2] for w in window) / masked
                    entry = self.record(loss, accuracy)
                    bar.set_postfix(loss=f"{loss:.3f}", acc=f"{accuracy:.3f}",
                                    pppl=f"{entry.get('dev_word_pppl', math.nan):.1f}")
                    window = []
        self.save("last")
        return self.state

    def record(self, loss: float, accuracy: float) -> dict[str, Any]:
        """Evaluate, log a point of the curve, keep the best checkpoint by dev pseudo-perplexity."""
        entry = {"step": self.state["step"], "tokens": self.state["tokens"], "train_loss": loss,
                 "masked_accuracy": accuracy, **self.dev_pppl()}
        self.state["curve"].append(entry)
        score = entry.get("dev_word_pppl", -self.state["step"])
        if score < self.state["best_pppl"]:
            self.state["best_pppl"], self.state["best_step"] = score, self.state["step"]
            self.save("best")
        self.save("last")
        return entry


def adapt(cfg: AdaptConfig, texts: Sequence[str] | None = None) -> dict[str, Any]:
    """Run (or resume) adaptation (on ``texts`` if given, else on ``cfg.train``); returns the state with the
    learning curve."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_text(out / "config.json", json.dumps(asdict(cfg), indent=1, default=str) + "\n")
    return Adapter(cfg, texts).run()


def export_delta(model_dir: str | Path, out_dir: str | Path, shard_mb: int = 12) -> Path:
    """Ship an adapted model as fp16 safetensors shards of every weight except the (frozen, tied) word
    embeddings, which the pip-installed encoder already has; ``materialise`` rebuilds the full model."""
    import torch
    from huggingface_hub import save_torch_state_dict
    from transformers import AutoModelForMaskedLM

    model = AutoModelForMaskedLM.from_pretrained(model_dir)
    tied = {n for n, p in model.named_parameters(remove_duplicate=False)
            if p is model.get_input_embeddings().weight}
    state = {k: v.to(torch.float16).contiguous() for k, v in model.state_dict().items()
             if k not in tied and not k.endswith(".decoder.weight")}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    save_torch_state_dict(state, out, filename_pattern="delta{suffix}.safetensors", max_shard_size=f"{shard_mb}MB")
    model.config.save_pretrained(out)
    return out
