"""Causal-LM log-likelihood (spec §1.2): LL(S) = Σ log P(t_i | BOS, t_<i), one forward pass per sentence."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import ConfigError
from .base import Scorer, no_grad_context
from .loading import fingerprint, load_pretrained, resolve_device, resolve_dtype

BOS_POLICIES = ("auto", "bos", "eos")


class CausalLMScorer(Scorer):
    """LL of any ``AutoModelForCausalLM`` (GGUF files too).

    ``bos``: the token every sentence is conditioned on — ``auto`` (the tokenizer's BOS, else its EOS, as
    GPT-2's ``<|endoftext|>``), ``bos`` or ``eos``; it is never scored. ``score_eos`` adds log P(EOS | S).
    """

    kind = "ll"
    default_budget = 512
    gpu_budget = 16384  # the logits of every position are kept: [tokens × vocabulary] fp32

    def __init__(self, model: str, bos: str = "auto", score_eos: bool = False, gguf_file: str | None = None,
                 device: str = "auto", dtype: str = "auto", revision: str | None = None,
                 trust_remote_code: bool = False, **common: Any):
        super().__init__(**common)
        if bos not in BOS_POLICIES:
            raise ConfigError(f"bos must be one of {', '.join(BOS_POLICIES)}, not {bos!r}")
        from transformers import AutoModelForCausalLM

        self.model_name, self.score_eos, self.bos_policy = model, score_eos, bos
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.tokenizer, self.model = load_pretrained(AutoModelForCausalLM, model, revision=revision,
                                                     gguf_file=gguf_file, trust_remote_code=trust_remote_code)
        self.model.to(self.device)
        tok = self.tokenizer
        self.bos_id = {"auto": tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id,
                       "bos": tok.bos_token_id, "eos": tok.eos_token_id}[bos]
        if self.bos_id is None:
            raise ConfigError(f"model {model!r} has no {bos} token to condition on")
        if score_eos and tok.eos_token_id is None:
            raise ConfigError(f"model {model!r} has no EOS token to score")
        self._fingerprint = fingerprint(str(model) if gguf_file is None else f"{model}/{gguf_file}", self.model)
        self._dtype_name = str(self.dtype).removeprefix("torch.")

    @property
    def signature(self) -> str:
        return self._signature(model=f"{self.model_name}@{self._fingerprint}", bos=self.bos_id,
                               eos="scored" if self.score_eos else "no", dtype=self._dtype_name)

    def prepare(self, text: str) -> np.ndarray:
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        tail = [self.tokenizer.eos_token_id] if self.score_eos else []
        return np.asarray([self.bos_id, *ids, *tail], dtype=np.int64)

    def num_rows(self, sentence: np.ndarray) -> int:
        return 1 if len(sentence) > 1 else 0

    def num_targets(self, sentence: np.ndarray) -> int:
        return len(sentence) - 1

    def row_length(self, sentence: np.ndarray) -> int:
        return len(sentence)

    def targets(self, sentence: np.ndarray, row: int) -> slice:
        return slice(0, len(sentence) - 1)

    def forward(self, rows: Sequence[tuple[np.ndarray, int]]) -> list[np.ndarray]:
        import torch

        lengths = np.array([len(s) for s, _ in rows])
        width = int(lengths.max())
        ids = np.zeros((len(rows), width), dtype=np.int64)
        for b, (s, _) in enumerate(rows):
            ids[b, : len(s)] = s
        input_ids = torch.from_numpy(ids).to(self.device)
        attention = None
        if (lengths != width).any():
            attention = torch.from_numpy((np.arange(width)[None, :] < lengths[:, None]).astype(np.int64)).to(self.device)
        with no_grad_context(self.device, self.dtype):
            logits = self.model(input_ids=input_ids, attention_mask=attention).logits[:, :-1].float()
            nxt = input_ids[:, 1:]
            picked = logits.gather(-1, nxt[..., None])[..., 0] - torch.logsumexp(logits, dim=-1)
        out = picked.cpu().numpy()
        return [out[b, : lengths[b] - 1] for b in range(len(rows))]

    def release_memory(self) -> None:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
