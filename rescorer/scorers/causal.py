"""Causal-LM log-likelihood: LL(S) = Σ log P(t_i | BOS, t_<i), one forward pass per sentence; with context,
LL(S | C) = Σ log P(t_i | BOS, C, t_<i) over the tokens of S only."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..context import split
from ..errors import ConfigError
from .base import TOKENIZE_CHUNK, Scorer, no_grad_context, token_bytes
from .prefix import ancestors, forest_pool, plant
from .rows import RowPool, columns, concat, padded, take
from .windows import causal_windows, model_positions

BOS_POLICIES = ("auto", "bos", "eos")
TREE_NODES = 512  # nodes of one prefix tree (a model row): its attention mask is nodes²


class CausalLMScorer(Scorer):
    """LL of any ``AutoModelForCausalLM`` (GGUF files too).

    ``bos``: the token every sentence is conditioned on — ``auto`` (the tokenizer's BOS, else its EOS, as
    GPT-2's ``<|endoftext|>``), ``bos`` or ``eos``; it is never scored. ``score_eos`` (default, as ESPnet's LM does) adds log
    P(EOS | S), so the empty text scores log P(EOS | BOS), not the empty sum 0.
    ``loaded``: an in-memory (tokenizer, model) pair to score with. ``context`` (:class:`~rescorer.context.Context`
    options): texts are ``context + SEPARATOR + hypothesis`` and only the hypothesis (and EOS) is scored, given
    the last ``context.tokens`` tokens of the context, fewer where the model's positions would not hold them.
    ``share_prefixes``: consecutive texts are read as prefix trees, so that what they begin with alike (an
    utterance's context, its hypotheses' first words) is computed once (``rescorer.scorers.prefix``).
    """

    kind = "ll"
    default_budget = 512
    gpu_budget = 16384  # the logits of every position are kept: [tokens × vocabulary] fp32

    def __init__(self, model: str, bos: str = "auto", score_eos: bool = True, gguf_file: str | None = None,
                 device: str = "auto", dtype: str = "auto", revision: str | None = None,
                 trust_remote_code: bool = False, loaded: tuple[Any, Any] | None = None, window: int | None = None,
                 stride: int | None = None, context: Any = None, share_prefixes: bool = True, **common: Any):
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
        self.share_prefixes = share_prefixes
        self.read_context(context, model)

    @property
    def signature(self) -> str:
        return self.signed(self.context)

    def signed(self, context: Any) -> str:
        read = {"context": context.signature} if context else {}
        return self._signature(model=self.model_tag, bos=self.bos_id, eos="scored" if self.score_eos else "no",
                               dtype=self.dtype_name, **self.window_given, **read)

    def prepare(self, text: str) -> np.ndarray:
        return self.prepare_all([text])[0]

    def prepare_all(self, texts: Sequence[str]) -> list[np.ndarray]:
        """[BOS, tokens, EOS (``score_eos``)] of each text, tokenized together; with context, [BOS, context
        tokens, hypothesis tokens, EOS], and ``.prefix`` says how many ids after BOS are context."""
        if self.context is not None:
            return self.prepare_conditional(texts)
        tail = [self.tokenizer.eos_token_id] if self.score_eos else []
        return [np.asarray([self.bos_id, *ids, *tail], dtype=np.int64)
                for i in range(0, len(texts), TOKENIZE_CHUNK)
                for ids in self.tokenizer(list(texts[i : i + TOKENIZE_CHUNK]), add_special_tokens=False)["input_ids"]]

    def prepare_conditional(self, texts: Sequence[str]) -> "Conditional":
        """Each ``context + SEPARATOR + hypothesis`` tokenized as the one text ``context hypothesis``: the tokens
        that end inside the context are context, the rest the hypothesis. The context keeps its last
        ``context.tokens`` tokens, fewer where BOS, context, hypothesis and EOS would not fit the model's positions
        (a hypothesis that does not fit alone is scored without context, in windows)."""
        tail = [self.tokenizer.eos_token_id] if self.score_eos else []
        out, prefix = Conditional(), []
        for i in range(0, len(texts), TOKENIZE_CHUNK):
            parts = [split(t)[:2] for t in texts[i : i + TOKENIZE_CHUNK]]
            joined = [f"{c} {h}" if c and h else c or h for c, h in parts]
            encoded = self.tokenizer(joined, add_special_tokens=False, return_offsets_mapping=True)
            for (context, _), ids, offsets in zip(parts, encoded["input_ids"], encoded["offset_mapping"]):
                given = sum(end <= len(context) for _, end in offsets) if context else 0
                room = max(self.width - 1 - len(tail) - (len(ids) - given), 0)
                keep = min(given, self.context.tokens, room)
                self.contexts_cut += keep < min(given, self.context.tokens)
                out.append(np.asarray([self.bos_id, *ids[given - keep :], *tail], dtype=np.int64))
                prefix.append(keep)
        out.prefix = np.asarray(prefix, dtype=np.int64)
        return out

    def pool(self, sentences: Sequence[np.ndarray]) -> RowPool:
        """One row per window (one per sentence when it fits): where its ids start in the pool of all ids, its
        length, and how many of its leading targets an earlier window already scored (``skip``)."""
        ids, id_start = concat(sentences)
        lengths = np.fromiter((len(s) for s in sentences), dtype=np.int64, count=len(sentences))
        prefix = getattr(sentences, "prefix", np.zeros(len(sentences), dtype=np.int64))  # context: read, not scored
        if self.share_prefixes and len(sentences) and lengths.max() <= self.width:
            return forest_pool(plant(sentences, prefix, TREE_NODES), np.maximum(lengths - 1 - prefix, 0))
        sentence, start, end, first = causal_windows(lengths, self.width, self.stride)
        first = np.maximum(first, prefix[sentence])
        return RowPool(sentence, end - start, first - prefix[sentence], end - 1 - first,
                       np.maximum(lengths - 1 - prefix, 0), {"ids": ids, "start": id_start[sentence] + start,
                                                               "skip": first - start})

    def batch(self, ids: np.ndarray, start: np.ndarray, length: np.ndarray) -> tuple[Any, Any, np.ndarray]:
        """Rows ``ids[start : start + length]`` right-padded on the device, the attention mask (None without
        padding) and the lengths."""
        rows, valid = padded(ids, start, length, 0)
        return self.to_device(rows), None if valid is None else self.to_device(valid.astype(np.int64)), length

    def forward(self, pool: RowPool, picked: np.ndarray) -> Callable[[], np.ndarray]:
        d = pool.data
        if "forest" in d:
            return self.to_host(self.tree_log_probs(d["forest"], picked))
        input_ids, attention, _ = self.batch(d["ids"], d["start"][picked], pool.length[picked])
        return self.to_host(self.log_probs(input_ids, attention, d["skip"][picked]))

    def tree_log_probs(self, forest: Any, picked: np.ndarray) -> Any:
        """The targets of the prefix trees ``picked``, [B, T]: each tree one row, each node attending to itself
        and its ancestors at the position of its depth; the vocabulary projection once per node that is read."""
        import torch

        index, valid = columns(forest.node_start[picked], forest.nodes[picked])
        ids, depth = take(forest.token, index, valid, 0), take(forest.depth, index, valid, 0)
        mask = ancestors(take(forest.parent, index, valid, -1))[:, None]  # [B, 1, N, N]
        width = ids.shape[1]
        index, valid = columns(forest.target_start[picked], forest.targets[picked])
        node = take(forest.target_node, index, valid, 0) + width * np.arange(len(picked))[:, None]  # flat (row, node)
        read, which = np.unique(node, return_inverse=True)
        which = self.to_device(which.reshape(node.shape))
        token = self.to_device(take(forest.target_token, index, valid, 0))
        inputs = dict(input_ids=self.to_device(ids), attention_mask=self.to_device(mask),
                      position_ids=self.to_device(depth))
        with no_grad_context(self.device, self.dtype):
            head = self.model.get_output_embeddings()
            if head is None or getattr(self.model.config, "final_logit_softcapping", None):
                logits = self.model(**inputs).logits.flatten(0, 1)[self.to_device(read)].float()
            else:  # the vocabulary projection only where a target is read (context nodes mostly are not)
                hidden = self.model.base_model(**inputs).last_hidden_state.flatten(0, 1)
                logits = head(hidden[self.to_device(read)]).float()
            logp = logits - torch.logsumexp(logits, dim=-1, keepdim=True)  # [read nodes, V]
            return logp[which, token]

    def log_probs(self, input_ids: Any, attention: Any, skip: np.ndarray) -> Any:
        """log P(id j + 1 | ids ≤ j) of each row on the device, [B, W - 1], from column ``skip[b]`` on."""
        import torch

        with no_grad_context(self.device, self.dtype):
            logits = self.model(input_ids=input_ids, attention_mask=attention).logits[:, :-1].float()
            picked = logits.gather(-1, input_ids[:, 1:, None])[..., 0] - torch.logsumexp(logits, dim=-1)
        if skip.any():  # later windows of a long text: their first targets were scored by the window before
            width = picked.shape[1]
            shifted = np.minimum(skip[:, None] + np.arange(width), width - 1)
            picked = picked.gather(1, self.to_device(shifted))
        return picked

    def next_token(self, candidates: Sequence[str], add_bos: bool = True) -> "NextTokenScorer":
        """A view scoring log P(candidate | prompt) of the next token for each candidate, [prompt, candidate].

        Each candidate must be one token; run it on prompts as given (no normalisation), after the BOS token
        when ``add_bos`` (a chat-templated prompt carries its own control tokens: pass False)."""
        return NextTokenScorer(self, candidates, add_bos)


class Conditional(list):
    """Prepared conditional texts, and for each how many ids after BOS are context (``prefix``)."""

    prefix: np.ndarray


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

    def pool(self, sentences: Sequence[np.ndarray]) -> RowPool:
        has_row = np.fromiter((len(s) > 0 for s in sentences), dtype=bool, count=len(sentences))
        return RowPool.one_per_sentence(sentences, np.where(has_row, len(self.candidate_ids), 0), has_row)

    def forward(self, pool: RowPool, picked: np.ndarray) -> Callable[[], np.ndarray]:
        import torch

        input_ids, attention, lengths = self.lm.batch(pool.data["ids"], pool.data["start"][picked], pool.length[picked])
        with no_grad_context(self.device, self.lm.dtype):
            logits = self.lm.model(input_ids=input_ids, attention_mask=attention).logits
            last = logits[torch.arange(len(picked), device=self.device), self.lm.to_device(lengths - 1)]
            logp = torch.log_softmax(last.float(), dim=-1)[:, self.lm.to_device(self.candidate_ids)]
        return self.lm.to_host(logp)
