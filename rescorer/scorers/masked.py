"""Masked-LM pseudo-log-likelihood (spec §1.1): one masked copy per token, four masking variants.

The encoder runs on each batch of copies; its last layer (BERT-style models) and
the MLM head are computed only at the scored position of each copy, so the
vocabulary projection costs one position per copy instead of all of them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import ConfigError
from .base import Scorer, no_grad_context, pad_rows, token_bytes
from .encoder_at import EncoderAt
from .windows import masked_shifts, model_positions

VARIANTS = ("original", "word_l2r", "whole_word", "sentence_l2r")
WORD_BOUNDARIES = ("tokenizer", "whitespace")

# The MLM head of each architecture, applied to gathered hidden states [B, H] → logits [B, V].
HEADS: dict[str, Callable[[Any, Any], Any]] = {
    "BertForMaskedLM": lambda m, h: m.cls(h),
    "RobertaForMaskedLM": lambda m, h: m.lm_head(h),
    "XLMRobertaForMaskedLM": lambda m, h: m.lm_head(h),
    "CamembertForMaskedLM": lambda m, h: m.lm_head(h),
    "AlbertForMaskedLM": lambda m, h: m.predictions(h),
    "DistilBertForMaskedLM": lambda m, h: m.vocab_projector(m.vocab_layer_norm(m.activation(m.vocab_transform(h)))),
    "ElectraForMaskedLM": lambda m, h: m.generator_lm_head(m.generator_predictions(h)),
    "ModernBertForMaskedLM": lambda m, h: m.decoder(m.head(h)),
}


@dataclass(frozen=True)
class MaskedSentence:
    ids: np.ndarray        # token ids with special tokens
    positions: np.ndarray  # position (in ids) of each scored token
    lo: np.ndarray         # masked span [lo, hi) (in ids) of the copy scoring each token
    hi: np.ndarray
    shift: np.ndarray      # per copy: scored tokens cut from the left of its window (0 when the text fits)
    keep: int              # scored tokens in a window

    @property
    def width(self) -> int:
        """Tokens in each copy (special tokens included)."""
        return len(self.ids) - len(self.positions) + min(self.keep, len(self.positions))

    def row(self, r: int) -> tuple[np.ndarray, int, int, int]:
        """Copy ``r``'s ids (unmasked), scored position and masked span, in its window's coordinates."""
        if self.keep >= len(self.positions):
            return self.ids, self.positions[r], self.lo[r], self.hi[r]
        first, last, cut = self.positions[0], self.positions[-1], self.shift[r]
        ids = np.concatenate([self.ids[:first], self.ids[first + cut : first + cut + self.keep], self.ids[last + 1 :]])
        end = first + self.keep
        return ids, self.positions[r] - cut, max(self.lo[r] - cut, first), min(self.hi[r] - cut, end)


def mask_spans(words: Sequence[int], variant: str) -> tuple[np.ndarray, np.ndarray]:
    """For scored token j (0-based, with its word index), the half-open span of scored tokens masked."""
    n = len(words)
    words = np.asarray(words)
    index = np.arange(n)
    new_word = np.r_[True, words[1:] != words[:-1]] if n else np.zeros(0, bool)
    start = np.maximum.accumulate(np.where(new_word, index, 0)) if n else index
    end_word = np.r_[words[1:] != words[:-1], True] if n else np.zeros(0, bool)
    end = (np.minimum.accumulate(np.where(end_word, index, n)[::-1])[::-1] + 1) if n else index
    if variant == "original":
        return index, index + 1
    if variant == "word_l2r":
        return index, end
    if variant == "whole_word":
        return start, end
    if variant == "sentence_l2r":
        return index, np.full(n, n)
    raise ConfigError(f"unknown PLL variant {variant!r} (choose from {', '.join(VARIANTS)})")


class MaskedLMScorer(Scorer):
    """PLL of any Hugging Face masked LM; ``variant`` in original | word_l2r | whole_word | sentence_l2r."""

    kind = "pll"
    default_budget = 1024
    gpu_budget = 65536  # one vocabulary row per copy: the encoder dominates
    empty_score = float("-inf")  # nothing to mask: a masked LM gives an empty sentence no probability

    def __init__(self, model: str, variant: str = "word_l2r", words: str = "tokenizer", device: str = "auto",
                 dtype: str = "auto", revision: str | None = None, trust_remote_code: bool = False,
                 head_at_mask: bool = True, last_layer_at_mask: bool = True, loaded: tuple[Any, Any] | None = None,
                 window: int | None = None, **common: Any):
        """``head_at_mask``/``last_layer_at_mask``: compute the MLM head / the last layer only where scored
        (exact; off = the plain full forward). ``loaded``: an in-memory (tokenizer, model) pair to score with.
        ``window``: tokens a copy may hold (default: the model's positions); longer texts are scored in windows
        (``rescorer.scorers.windows``)."""
        super().__init__(**common)
        if variant not in VARIANTS:
            raise ConfigError(f"unknown PLL variant {variant!r} (choose from {', '.join(VARIANTS)})")
        if words not in WORD_BOUNDARIES:
            raise ConfigError(f"words must be one of {', '.join(WORD_BOUNDARIES)}, not {words!r}")
        from transformers import AutoModelForMaskedLM

        self.variant, self.words = variant, words
        self.load_model(AutoModelForMaskedLM, model, device, dtype, loaded, revision=revision,
                        trust_remote_code=trust_remote_code)
        self.bytes_per_token = token_bytes(self.model.config)
        if self.tokenizer.mask_token_id is None:
            raise ConfigError(f"model {model!r} has no mask token")
        self.positions_limit, self.window_given = window or model_positions(self.model, self.tokenizer), bool(window)
        self.head = HEADS.get(type(self.model).__name__) if head_at_mask else None
        self.encoder_at = EncoderAt(self.model.base_model, fast=last_layer_at_mask) if self.head is not None else None

    @property
    def signature(self) -> str:
        window = {"window": self.positions_limit} if self.window_given else {}
        return self._signature(model=self.model_tag, variant=self.variant,
                               words=self.words, dtype=self.dtype_name, **window)

    def prepare(self, text: str) -> MaskedSentence:
        enc = self.tokenizer(text, return_special_tokens_mask=True, return_offsets_mapping=self.words == "whitespace")
        ids = np.asarray(enc["input_ids"], dtype=np.int64)
        positions = np.flatnonzero(np.asarray(enc["special_tokens_mask"]) == 0)
        if self.words == "whitespace":
            starts = [enc["offset_mapping"][p][0] for p in positions]
            word_of_char = np.cumsum([c.isspace() for c in text]) if text else np.zeros(0)
            words = [int(word_of_char[s]) for s in starts]
        else:
            word_ids = enc.word_ids()
            words = [word_ids[p] for p in positions]
        lo, hi = mask_spans(words, self.variant)
        if len(positions):
            lo, hi = positions[lo], positions[hi - 1] + 1
        keep = max(1, self.positions_limit - (len(ids) - len(positions)))
        return MaskedSentence(ids, positions, lo, hi, masked_shifts(len(positions), keep), keep)

    def num_rows(self, sentence: MaskedSentence) -> int:
        return len(sentence.positions)

    def num_targets(self, sentence: MaskedSentence) -> int:
        return len(sentence.positions)

    def row_length(self, sentence: MaskedSentence) -> int:
        return sentence.width

    def targets(self, sentence: MaskedSentence, row: int) -> slice:
        return slice(row, row + 1)

    def forward(self, rows: Sequence[tuple[MaskedSentence, int]]) -> Callable[[], list[np.ndarray]]:
        import torch

        copies = [s.row(r) for s, r in rows]
        ids, lengths, mask = pad_rows([c[0] for c in copies], self.tokenizer.pad_token_id or 0)
        target_pos, lo, hi = (np.array([c[k] for c in copies]) for k in (1, 2, 3))
        lo, hi = lo[:, None], hi[:, None]
        target_ids = ids[np.arange(len(rows)), target_pos].copy()
        span = np.arange(ids.shape[1])[None, :]
        ids[(span >= lo) & (span < hi)] = self.tokenizer.mask_token_id
        input_ids = self.to_device(ids)
        attention = None if mask is None else self.to_device(mask)
        gather = self.to_device(target_pos)
        batch = torch.arange(len(rows), device=self.device)
        with no_grad_context(self.device, self.dtype):
            if self.head is not None:
                logits = self.head(self.model, self.encoder_at(input_ids, attention, batch, gather))
            else:
                logits = self.model(input_ids=input_ids, attention_mask=attention).logits[batch, gather]
            logp = torch.log_softmax(logits.float(), dim=-1)
            picked = logp[batch, self.to_device(target_ids)]
        ready = self.to_host(picked)
        return lambda: list(ready()[:, None])
