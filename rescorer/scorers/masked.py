"""Masked-LM pseudo-log-likelihood: one masked copy per token, four masking variants.

The encoder runs on each batch of copies; its last layer (BERT-style models) and
the MLM head are computed only at the scored position of each copy, so the
vocabulary projection costs one position per copy instead of all of them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..context import split
from ..errors import ConfigError, UnknownNameError
from .base import TOKENIZE_CHUNK, Scorer, no_grad_context, token_bytes
from .encoder_at import EncoderAt
from .rows import RowPool, columns, concat, expand, take
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


def mask_spans(words: Sequence[int], variant: str) -> tuple[np.ndarray, np.ndarray]:
    """For scored token j (0-based, with its word index), the half-open span of scored tokens masked."""
    n = len(words)
    index = np.arange(n)
    if variant == "original":
        return index, index + 1
    if variant == "sentence_l2r":
        return index, np.full(n, n)
    words = np.asarray(words)
    change = np.flatnonzero(words[1:] != words[:-1]) + 1  # where a word starts, after the first
    starts, ends = np.concatenate(([0], change)), np.concatenate((change, [n]))
    word = np.repeat(np.arange(len(starts)), ends - starts)
    if variant == "word_l2r":
        return index, ends[word]
    if variant == "whole_word":
        return starts[word], ends[word]
    raise UnknownNameError("PLL variant", variant, VARIANTS)


class MaskedLMScorer(Scorer):
    """PLL of any Hugging Face masked LM; ``variant`` in original | word_l2r | whole_word | sentence_l2r.
    ``context`` (:class:`~rescorer.context.Context` options): texts are ``context + SEPARATOR + hypothesis`` (and
    ``+ SEPARATOR + following``); only the hypothesis's tokens are masked and scored, the context (its last
    ``context.tokens`` tokens, fewer where the model's positions would not hold them) stays visible to the left,
    the following utterances (their first ``context.tokens``, then what still fits) to the right."""

    kind = "pll"
    default_budget = 1024
    gpu_budget = 65536  # one vocabulary row per copy: the encoder dominates
    empty_score = float("-inf")  # nothing to mask: a masked LM gives an empty sentence no probability

    def __init__(self, model: str, variant: str = "word_l2r", words: str = "tokenizer", device: str = "auto",
                 dtype: str = "auto", revision: str | None = None, trust_remote_code: bool = False,
                 head_at_mask: bool = True, last_layer_at_mask: bool = True, loaded: tuple[Any, Any] | None = None,
                 window: int | None = None, context: Any = None, **common: Any):
        """``head_at_mask``/``last_layer_at_mask``: compute the MLM head / the last layer only where scored
        (exact; off = the plain full forward). ``loaded``: an in-memory (tokenizer, model) pair to score with.
        ``window``: tokens a copy may hold (default: the model's positions); longer texts are scored in windows
        (``rescorer.scorers.windows``)."""
        super().__init__(**common)
        if variant not in VARIANTS:
            raise UnknownNameError("PLL variant", variant, VARIANTS)
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
        self.read_context(context, model, following=True)

    @property
    def signature(self) -> str:
        return self.signed(self.context)

    def signed(self, context: Any) -> str:
        window = {"window": self.positions_limit} if self.window_given else {}
        read = {"context": context.signature} if context else {}
        return self._signature(model=self.model_tag, variant=self.variant,
                               words=self.words, dtype=self.dtype_name, **window, **read)

    def prepare(self, text: str) -> MaskedSentence:
        return self.prepare_all([text])[0]

    def prepare_all(self, texts: Sequence[str]) -> list[MaskedSentence]:
        """The texts tokenized together (a few thousand per tokenizer call)."""
        offsets = self.words == "whitespace" or self.context is not None
        out: list[MaskedSentence] = []
        for i in range(0, len(texts), TOKENIZE_CHUNK):
            parts = [split(t) if self.context else ("", t, "") for t in texts[i : i + TOKENIZE_CHUNK]]
            chunk = [" ".join(part for part in text if part) for text in parts]
            spans = [(len(c) + bool(c and h), len(c) + bool(c and h) + len(h)) for c, h, _ in parts]
            enc = self.tokenizer(chunk, return_special_tokens_mask=True, return_offsets_mapping=offsets)
            out += [self.sentence(text, enc, b, span if self.context else None)
                    for b, (text, span) in enumerate(zip(chunk, spans))]
        return out

    def sentence(self, text: str, enc: Any, b: int, span: tuple[int, int] | None = None) -> MaskedSentence:
        """Text ``b`` of a batch encoding ``enc`` as its masked copies; with a context, only the tokens inside
        ``span`` (the hypothesis's characters) are scored, and the context on each side keeps what fits."""
        ids = np.asarray(enc["input_ids"][b], dtype=np.int64)
        positions = np.flatnonzero(np.asarray(enc["special_tokens_mask"][b]) == 0)
        if self.words == "whitespace":
            starts = [enc["offset_mapping"][b][p][0] for p in positions]
            word_of_char = np.cumsum([c.isspace() for c in text]) if text else np.zeros(0)
            words = np.asarray([int(word_of_char[s]) for s in starts], dtype=np.int64)
        else:
            word_ids = enc.word_ids(b)
            words = np.asarray([word_ids[p] for p in positions], dtype=np.int64)
        if span is not None:
            start, end = (np.asarray([enc["offset_mapping"][b][p][k] for p in positions], dtype=np.int64).reshape(-1)
                          for k in (0, 1))
            before, after = positions[end <= span[0]], positions[(start >= span[1]) & (end > span[0])]
            scored = (end > span[0]) & (start < span[1])
            positions, words = positions[scored], words[scored]
            room = max(self.positions_limit - (len(ids) - len(before) - len(after)), 0)
            left = min(len(before), self.context.tokens, room)
            right = min(len(after), self.context.tokens, room - left)
            self.contexts_cut += (left < min(len(before), self.context.tokens)
                                  or right < min(len(after), self.context.tokens))
            # the context before loses its first tokens, the one after its last
            ids = np.delete(ids, np.concatenate((before[: len(before) - left], after[right:])))
            positions = positions - (len(before) - left)
        return self.copies(ids, positions, words)

    def copies(self, ids: np.ndarray, positions: np.ndarray, words: Sequence[int]) -> MaskedSentence:
        """The masked copies of ``ids`` that score the tokens at ``positions`` (their word index in ``words``)."""
        lo, hi = mask_spans(words, self.variant)
        if len(positions):
            lo, hi = positions[lo], positions[hi - 1] + 1
        keep = max(1, self.positions_limit - (len(ids) - len(positions)))
        return MaskedSentence(ids, positions, lo, hi, masked_shifts(len(positions), keep), keep)

    def pool(self, sentences: Sequence[MaskedSentence]) -> RowPool:
        """One row per scored token: where its copy's ids start in the pool of all ids, its masked span and
        scored position in its window's coordinates, and (long texts) how its window maps onto the text."""
        ids, id_start = concat([s.ids for s in sentences])
        positions, _ = concat([s.positions for s in sentences])
        n = np.fromiter((len(s.positions) for s in sentences), dtype=np.int64, count=len(sentences))
        sentence, row = expand(n)

        def per_row(values: Any) -> np.ndarray:
            return np.fromiter(values, dtype=np.int64, count=len(sentences))[sentence]
        first = per_row(s.positions[0] if len(s.positions) else 0 for s in sentences)
        keep, width = per_row(s.keep for s in sentences), per_row(s.width for s in sentences)
        cut, lo, hi = (concat([getattr(s, k) for s in sentences])[0] for k in ("shift", "lo", "hi"))
        windowed = keep < n[sentence]  # the copy is a window cut from a longer text (rows.py: a copy's columns)
        lo = np.where(windowed, np.maximum(lo - cut, first), lo)
        hi = np.where(windowed, np.minimum(hi - cut, first + keep), hi)
        target = positions - cut
        data = {"ids": ids, "start": id_start[sentence], "target": target, "target_id": ids[id_start[sentence] + positions],
                "lo": lo, "hi": hi, "one_token": bool(np.all((lo == target) & (hi == target + 1))),
                "windowed": bool(windowed.any())}
        if data["windowed"]:  # copy column c reads ids[c + cut] from the first scored column, ids[c + skipped] from
            skipped = per_row(len(s.ids) for s in sentences) - width  # the window's end (the closing special tokens)
            data.update(cut=cut, cut_at=first, tail_at=first + keep, tail_shift=skipped - cut)
        return RowPool(sentence, width, row, np.ones(len(sentence), dtype=np.int64), n, data)

    def batch(self, pool: RowPool, picked: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray]:
        """The masked copies ``picked`` as padded ids, the mask of real tokens (None: none padded), the scored
        column of each and the id it must predict."""
        d = pool.data
        index, valid = columns(d["start"][picked], pool.length[picked])
        if d["windowed"]:
            c = np.arange(index.shape[1])
            index += (d["cut"][picked, None] * (c >= d["cut_at"][picked, None])
                      + d["tail_shift"][picked, None] * (c >= d["tail_at"][picked, None]))
        ids = take(d["ids"], index, valid, self.tokenizer.pad_token_id or 0)
        target = d["target"][picked]
        if d["one_token"]:
            ids[np.arange(len(picked)), target] = self.tokenizer.mask_token_id
        else:
            c = np.arange(ids.shape[1])
            ids[(c >= d["lo"][picked, None]) & (c < d["hi"][picked, None])] = self.tokenizer.mask_token_id
        return ids, valid, target, d["target_id"][picked]

    def forward(self, pool: RowPool, picked: np.ndarray) -> Callable[[], np.ndarray]:
        return self.to_host(self.log_probs(*self.batch(pool, picked)))

    def log_probs(self, ids: np.ndarray, valid: np.ndarray | None, target: np.ndarray, target_ids: np.ndarray) -> Any:
        """log P(target id | copy) at each copy's scored column: a [B, 1] fp32 tensor on the device."""
        import torch

        input_ids = self.to_device(ids)
        attention = None if valid is None else self.to_device(valid.astype(np.int64))
        gather = self.to_device(target)
        batch = torch.arange(len(ids), device=self.device)
        with no_grad_context(self.device, self.dtype):
            if self.head is not None:
                logits = self.head(self.model, self.encoder_at(input_ids, attention, batch, gather))
            else:
                logits = self.model(input_ids=input_ids, attention_mask=attention).logits[batch, gather]
            logp = torch.log_softmax(logits.float(), dim=-1)
            return logp[batch, self.to_device(target_ids)][:, None]
