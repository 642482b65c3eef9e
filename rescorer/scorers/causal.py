"""Causal-LM log-likelihood (spec §1.2): LL(S) = Σ log P(t_i | BOS, t_<i), one forward pass per sentence."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..errors import ConfigError
from .base import Scorer, no_grad_context, pad_rows, token_bytes
from .windows import causal_windows, model_positions

BOS_POLICIES = ("auto", "bos", "eos")


class CausalLMScorer(Scorer):
    """LL of any ``AutoModelForCausalLM`` (GGUF files too).

    ``bos``: the token every sentence is conditioned on — ``auto`` (the tokenizer's BOS, else its EOS, as
    GPT-2's ``<|endoftext|>``), ``bos`` or ``eos``; it is never scored. ``score_eos`` (default, as ESPnet's LM does) adds log
    P(EOS | S), so the empty text scores log P(EOS | BOS), not the empty sum 0.
    ``loaded``: an in-memory (tokenizer, model) pair to score with.
    """

    kind = "ll"
    default_budget = 512
    gpu_budget = 16384  # the logits of every position are kept: [tokens × vocabulary] fp32

    def __init__(self, model: str, bos: str = "auto", score_eos: bool = True, gguf_file: str | None = None,
                 device: str = "auto", dtype: str = "auto", revision: str | None = None,
                 trust_remote_code: bool = False, loaded: tuple[Any, Any] | None = None, window: int | None = None,
                 stride: int | None = None, **common: Any):
        """``window``/``stride``: tokens the model reads at once (default: its positions) and how far a window
        advances over a longer text (default: half a window; ``rescorer.scorers.windows``)."""
        super().__init__(**common)
        if bos not in BOS_POLICIES:
            raise ConfigError(f"bos must be one of {', '.join(BOS_POLICIES)}, not {bos!r}")
        from transformers import AutoModelForCausalLM

        self.score_eos, self.bos_policy = score_eos, bos
        self.load_model(AutoModelForCausalLM, model, device, dtype, loaded,
                        str(model) if gguf_file is None else f"{model}/{gguf_file}", revision=revision,
                        gguf_file=gguf_file, trust_remote_code=trust_remote_code)
        self.bytes_per_token = token_bytes(self.model.config, vocabulary_logits=True)
        tok = self.tokenizer
        self.bos_id = {"auto": tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id,
                       "bos": tok.bos_token_id, "eos": tok.eos_token_id}[bos]
        if self.bos_id is None:
            raise ConfigError(f"model {model!r} has no {bos} token to condition on")
        if score_eos and tok.eos_token_id is None:
            raise ConfigError(f"model {model!r} has no EOS token to score")
        self.width = max(2, window or model_positions(self.model, self.tokenizer))
        self.stride = max(1, min(stride or self.width // 2, self.width - 1))
        self.window_given = {k: v for k, v in (("window", window), ("stride", stride)) if v}

    @property
    def signature(self) -> str:
        return self._signature(model=self.model_tag, bos=self.bos_id,
                               eos="scored" if self.score_eos else "no", dtype=self.dtype_name, **self.window_given)

    def windows(self, sentence: np.ndarray) -> list[tuple[int, int, int]]:
        return causal_windows(len(sentence), self.width, self.stride)

    def prepare(self, text: str) -> np.ndarray:
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        tail = [self.tokenizer.eos_token_id] if self.score_eos else []
        return np.asarray([self.bos_id, *ids, *tail], dtype=np.int64)

    def num_rows(self, sentence: np.ndarray) -> int:
        return len(self.windows(sentence)) if len(sentence) > 1 else 0

    def num_targets(self, sentence: np.ndarray) -> int:
        return len(sentence) - 1

    def row_length(self, sentence: np.ndarray) -> int:
        return min(len(sentence), self.width)

    def targets(self, sentence: np.ndarray, row: int) -> slice:
        _, end, first = self.windows(sentence)[row]
        return slice(first, end - 1)

    def batch(self, sequences: Sequence[np.ndarray]) -> tuple[Any, Any, np.ndarray]:
        """Right-padded ids on the device, the attention mask (None without padding) and the lengths."""
        ids, lengths, mask = pad_rows(sequences, 0)
        return self.to_device(ids), None if mask is None else self.to_device(mask), lengths

    def forward(self, rows: Sequence[tuple[np.ndarray, int]]) -> Callable[[], list[np.ndarray]]:
        import torch

        windows = [self.windows(s)[r] for s, r in rows]
        input_ids, attention, _ = self.batch([s[start:end] for (s, _), (start, end, _) in zip(rows, windows)])
        with no_grad_context(self.device, self.dtype):
            logits = self.model(input_ids=input_ids, attention_mask=attention).logits[:, :-1].float()
            nxt = input_ids[:, 1:]
            picked = logits.gather(-1, nxt[..., None])[..., 0] - torch.logsumexp(logits, dim=-1)
        ready = self.to_host(picked)

        def collect() -> list[np.ndarray]:
            out = ready()
            return [out[b, first - start : end - 1 - start] for b, (start, end, first) in enumerate(windows)]
        return collect

    def next_token(self, candidates: Sequence[str], add_bos: bool = True) -> "NextTokenScorer":
        """A view scoring log P(candidate | prompt) of the next token for each candidate, [prompt, candidate].

        Each candidate must be one token; run it on prompts as given (no normalisation), after the BOS token
        when ``add_bos`` (a chat-templated prompt carries its own control tokens: pass False)."""
        return NextTokenScorer(self, candidates, add_bos)


class NextTokenScorer(Scorer):
    """The log-probs of a fixed set of one-token candidates right after each prompt, with a loaded causal LM.

    One row per prompt; its "tokens" are the candidates' log-probs (so the engine batches, caches and
    resumes them like any score). Made by ``CausalLMScorer.next_token``.
    """

    kind = "next"

    def __init__(self, lm: CausalLMScorer, candidates: Sequence[str], add_bos: bool = True):
        super().__init__(normaliser=lm.normaliser)
        self.lm, self.add_bos, self.candidates = lm, add_bos, list(candidates)
        self.device, self.default_budget, self.gpu_budget = lm.device, lm.default_budget, lm.gpu_budget
        ids = [lm.tokenizer(c, add_special_tokens=False)["input_ids"] for c in self.candidates]
        for candidate, tokens in zip(self.candidates, ids):
            if len(tokens) != 1:
                raise ConfigError(f"candidate answer {candidate!r} is {len(tokens)} tokens for model "
                                  f"{lm.model_name!r} ({lm.tokenizer.convert_ids_to_tokens(tokens)}); it must be one")
        self.candidate_ids = np.array([t[0] for t in ids], dtype=np.int64)

    @property
    def signature(self) -> str:
        lm = self.lm
        return self._signature(model=lm.model_tag, bos=lm.bos_id if self.add_bos else "none",
                               candidates=",".join(map(str, self.candidate_ids)), dtype=lm.dtype_name)

    def prepare(self, text: str) -> np.ndarray:
        ids = self.lm.tokenizer(text, add_special_tokens=False)["input_ids"]
        return np.asarray([self.lm.bos_id, *ids] if self.add_bos else ids, dtype=np.int64)

    def num_rows(self, sentence: np.ndarray) -> int:
        return 1 if len(sentence) else 0

    def num_targets(self, sentence: np.ndarray) -> int:
        return len(self.candidate_ids)

    def row_length(self, sentence: np.ndarray) -> int:
        return len(sentence)

    def targets(self, sentence: np.ndarray, row: int) -> slice:
        return slice(0, len(self.candidate_ids))

    def forward(self, rows: Sequence[tuple[np.ndarray, int]]) -> list[np.ndarray]:
        import torch

        input_ids, attention, lengths = self.lm.batch([s for s, _ in rows])
        with no_grad_context(self.device, self.lm.dtype):
            logits = self.lm.model(input_ids=input_ids, attention_mask=attention).logits
            last = logits[torch.arange(len(rows), device=self.device), self.lm.to_device(lengths - 1)]
            logp = torch.log_softmax(last.float(), dim=-1)[:, self.lm.to_device(self.candidate_ids)]
        ready = self.lm.to_host(logp)
        return lambda: list(ready())
