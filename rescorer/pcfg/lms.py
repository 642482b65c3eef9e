"""Small transformer LMs for a sampled corpus (Jumelet & Zuidema §5.2, scaled to the CPU): whitespace word
tokenizers, BERT- and GPT-2-shaped models, and a resumable causal-LM training loop.

Masked LMs are trained by ``rescorer.train.adapt`` (15% masking, checkpoints by dev pseudo-perplexity);
the causal loop here mirrors it: AdamW, warm-up then linear decay, ``eval_every`` steps a dev perplexity
picks ``out_dir/best``, and a run stopped by ``until``/``max_seconds`` resumes from ``out_dir/last``.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from tqdm.auto import tqdm

from ..errors import ConfigError
from ..io.common import write_text
from ..scorers.loading import resolve_device
from ..train.checkpoint import load_checkpoint, save_checkpoint

MASKED_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
CAUSAL_SPECIALS = ("[PAD]", "[UNK]", "[BOS]", "[EOS]")


@dataclass(frozen=True)
class Shape:
    """A transformer's size (the paper: 8 layers, 8 heads, 256 wide)."""

    layers: int = 4
    heads: int = 4
    hidden: int = 128
    intermediate: int = 512
    max_length: int = 64  # words per sentence the position embeddings cover (special tokens added)


def word_tokenizer(texts: Sequence[str], causal: bool, min_frequency: int = 1) -> Any:
    """A fast word-level tokenizer over whitespace-separated words (words seen fewer than ``min_frequency``
    times become [UNK]); masked: ``[CLS] … [SEP]`` with [MASK]; causal: [BOS]/[EOS] (added by the caller)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = CAUSAL_SPECIALS if causal else MASKED_SPECIALS
    words = {w for t in texts for w in t.split()}
    clash = [s for s in specials if s in words]
    if clash:
        raise ConfigError(f"the corpus uses the tokenizer's special tokens as words: {clash}")
    raw = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    raw.train_from_iterator(texts, trainers.WordLevelTrainer(min_frequency=min_frequency, special_tokens=list(specials),
                                                             show_progress=False))
    if causal:
        return PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]", pad_token="[PAD]", bos_token="[BOS]",
                                       eos_token="[EOS]", model_max_length=1024)
    raw.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", raw.token_to_id("[CLS]")), ("[SEP]", raw.token_to_id("[SEP]"))])
    return PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]", model_max_length=1024)


def build_lm(tokenizer: Any, shape: Shape, causal: bool, out_dir: str | Path, seed: int = 0) -> Path:
    """A freshly initialised BertForMaskedLM or GPT2LMHeadModel of ``shape`` with ``tokenizer``, saved to
    ``out_dir`` (kept as it is when already there)."""
    import torch
    import transformers as tf

    out = Path(out_dir)
    if (out / "config.json").exists():
        return out
    vocab = len(tokenizer)
    if causal:
        config = tf.GPT2Config(vocab_size=vocab, n_embd=shape.hidden, n_layer=shape.layers, n_head=shape.heads,
                               n_inner=shape.intermediate, n_positions=shape.max_length + 2,
                               bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                               pad_token_id=tokenizer.pad_token_id)
    else:
        config = tf.BertConfig(vocab_size=vocab, hidden_size=shape.hidden, num_hidden_layers=shape.layers,
                               num_attention_heads=shape.heads, intermediate_size=shape.intermediate,
                               max_position_embeddings=shape.max_length + 2, pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(seed)
    model = (tf.GPT2LMHeadModel if causal else tf.BertForMaskedLM)(config)
    tmp = out.with_name(f".{out.name}.tmp")
    tokenizer.save_pretrained(tmp)
    model.save_pretrained(tmp)
    tmp.rename(out)
    return out


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
    max_length: int = 64
    max_seconds: float = math.inf
    until: int | None = None  # stop after this step (a stage of a longer run); the next run resumes
    device: str = "auto"
    seed: int = 0
    progress: bool | None = None


class CausalTrainer:
    """One causal-LM run on in-memory sentences: next-word cross-entropy on [BOS] w_1 … w_n [EOS]."""

    def __init__(self, cfg: CausalConfig, texts: Sequence[str], dev_texts: Sequence[str] = ()):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.cfg, self.out, self.texts, self.dev_texts = cfg, Path(cfg.out_dir), list(texts), list(dev_texts)
        self.device = resolve_device(cfg.device)
        resume = load_checkpoint(self.out, device=self.device)
        source = str(self.out / "last") if resume else cfg.init
        self.tokenizer = AutoTokenizer.from_pretrained(source)
        self.model = AutoModelForCausalLM.from_pretrained(source).to(self.device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        schedule = lambda step: min(1.0, (step + 1) / cfg.warmup) * max(0.0, 1 - step / cfg.steps)  # noqa: E731
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, schedule)
        self.state: dict[str, Any] = {"step": 0, "tokens": 0, "best_ppl": math.inf, "best_step": None, "curve": []}
        if resume:
            self.state, saved = resume
            self.optimizer.load_state_dict(saved["optimizer"])
            self.scheduler.load_state_dict(saved["scheduler"])

    def encode(self, texts: Sequence[str]) -> tuple[Any, Any, Any]:
        """(input ids, attention mask, labels): [BOS] words [EOS], padded; labels −100 on padding."""
        import torch

        tok = self.tokenizer
        rows = [[tok.bos_token_id, *ids[: self.cfg.max_length], tok.eos_token_id]
                for ids in tok(list(texts), add_special_tokens=False)["input_ids"]]
        width = max(map(len, rows))
        ids = np.full((len(rows), width), tok.pad_token_id, dtype=np.int64)
        for r, row in enumerate(rows):
            ids[r, : len(row)] = row
        mask = np.arange(width)[None, :] < np.array([len(r) for r in rows])[:, None]
        labels = np.where(mask, ids, -100)
        return (torch.from_numpy(ids).to(self.device), torch.from_numpy(mask.astype(np.int64)).to(self.device),
                torch.from_numpy(labels).to(self.device))

    def step(self) -> float:
        import torch

        n, size, step = len(self.texts), self.cfg.batch_size, self.state["step"]
        epoch, start = divmod(step * size, n)
        order = np.random.default_rng(self.cfg.seed + epoch).permutation(n)
        ids, mask, labels = self.encode([self.texts[i] for i in order[start : start + size]])
        torch.manual_seed(self.cfg.seed * 1_000_003 + step)
        loss = self.model(input_ids=ids, attention_mask=mask, labels=labels).loss
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.scheduler.step()
        self.state["step"] += 1
        self.state["tokens"] += int(mask.sum())
        return float(loss.detach())

    def dev_ppl(self) -> dict[str, float]:
        """Perplexity of the dev words (the end token not counted), as the LL scorer would report it."""
        import torch

        if not self.dev_texts:
            return {}
        self.model.eval()
        total, count = 0.0, 0
        with torch.inference_mode():
            for start in range(0, len(self.dev_texts), 64):
                ids, mask, labels = self.encode(self.dev_texts[start : start + 64])
                logits = self.model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
                target = labels[:, 1:].clone()
                target[target == self.tokenizer.eos_token_id] = -100
                nll = torch.nn.functional.cross_entropy(logits.transpose(1, 2), target, reduction="sum",
                                                        ignore_index=-100)
                total, count = total + float(nll), count + int((target != -100).sum())
        self.model.train()
        return {"dev_ppl": math.exp(total / count)}

    def record(self, loss: float) -> dict[str, Any]:
        entry = {"step": self.state["step"], "tokens": self.state["tokens"], "train_loss": loss, **self.dev_ppl()}
        self.state["curve"].append(entry)
        score = entry.get("dev_ppl", -self.state["step"])
        if score < self.state["best_ppl"]:
            self.state["best_ppl"], self.state["best_step"] = score, self.state["step"]
            save_checkpoint(self.out, "best", self.model, self.tokenizer, self.state)
        self.save()
        return entry

    def save(self) -> None:
        save_checkpoint(self.out, "last", self.model, self.tokenizer, self.state,
                        {"optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict()})

    def run(self) -> dict[str, Any]:
        self.model.train()
        start = time.perf_counter()
        if self.state["step"] == 0 and not self.state["curve"]:
            self.record(math.nan)
        losses: list[float] = []
        last = min(self.cfg.steps, self.cfg.until or self.cfg.steps)
        with tqdm(total=self.cfg.steps, initial=self.state["step"], desc="causal LM", unit="step",
                  disable=None if self.cfg.progress is None else not self.cfg.progress) as bar:
            while self.state["step"] < last and time.perf_counter() - start < self.cfg.max_seconds:
                losses.append(self.step())
                bar.update(1)
                if self.state["step"] % self.cfg.eval_every == 0 or self.state["step"] == self.cfg.steps:
                    entry = self.record(float(np.mean(losses)))
                    bar.set_postfix(loss=f"{entry['train_loss']:.3f}", ppl=f"{entry.get('dev_ppl', math.nan):.1f}")
                    losses = []
        self.save()
        return self.state


def train_causal(cfg: CausalConfig, texts: Sequence[str], dev_texts: Sequence[str] = ()) -> dict[str, Any]:
    """Run (or resume) causal-LM training; returns the state with the learning curve."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_text(out / "config.json", json.dumps(asdict(cfg), indent=1, default=str) + "\n")
    return CausalTrainer(cfg, texts, dev_texts).run()
