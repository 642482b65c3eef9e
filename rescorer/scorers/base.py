"""What every scorer is: a model adapter that turns a text into rows and rows into log-probs.

A scorer knows nothing of stores, batching or progress: ``rescorer.engine`` runs its rows. The protocol:
``prepare(text)`` once per text (``prepare_all(texts)``: all at once); ``pool(sentences)`` once per run (every row as flat arrays, ``RowPool``);
``forward(pool, picked)`` per batch, vectorised over the batch's rows.
"""
from __future__ import annotations

import contextlib
from dataclasses import replace
from abc import ABC, abstractmethod
from typing import Any, Callable, Sequence

import numpy as np

from ..context import Context
from ..errors import ConfigError
from ..normalise import Normaliser
from ..version import TOOL, signature
from .rows import RowPool

TOKENIZE_CHUNK = 4096  # texts per tokenizer call in ``prepare_all``


class Scorer(ABC):
    """A sentence scorer. Subclasses say how a text becomes rows; the engine batches and runs them."""

    kind: str = "scorer"
    default_budget: int = 1024      # tokens per batch on the CPU (moderate budgets are fastest there)
    gpu_budget: int = 32768         # tokens per batch on a GPU (large batches keep it busy)
    device: str = "cpu"
    spec: dict[str, Any] | None = None  # load_adapter's arguments: how a worker process rebuilds this scorer
    bytes_per_token: int = 0        # GPU memory a batch token costs (0: no budget from free memory)
    # The total of a text with nothing to score (no rows). 0.0, the empty sum, would be the best log-score
    # possible; scorers for which an empty text has no probability say −inf, so it can never win on them.
    empty_score: float = 0.0
    context: Any = None  # a rescorer.context.Context where the scorer reads each text after its context

    def __init__(self, normaliser: Normaliser | None = None, compile: bool = False):
        self.normaliser = normaliser or Normaliser()
        self.compile = compile

    # ---- what a subclass provides
    @property
    @abstractmethod
    def signature(self) -> str:
        """Everything that changes the numbers, as ``key:value|…`` (the score store's key)."""

    @abstractmethod
    def prepare(self, text: str) -> Any:
        """Tokenize one scored text into whatever ``pool`` needs."""

    def prepare_all(self, texts: Sequence[str]) -> list[Any]:
        """``prepare`` of each text (a scorer may tokenize them together, which is faster)."""
        return [self.prepare(t) for t in texts]

    @abstractmethod
    def pool(self, sentences: Sequence[Any]) -> RowPool:
        """Every row of the prepared ``sentences`` as flat arrays (``rescorer.scorers.rows``), built once."""

    @abstractmethod
    def forward(self, pool: RowPool, picked: np.ndarray) -> np.ndarray | Callable[[], np.ndarray]:
        """Log-probs (natural log) of the rows ``picked`` (indices into ``pool``) as ``out[B, W]``, row ``b``'s
        ``pool.count[picked[b]]`` targets left-aligned; or a function returning them once the device has them
        (``to_host``): the engine launches the next batch before it asks."""

    def scored_tokens(self, texts: Sequence[str]) -> np.ndarray:
        """How many per-token scores each text gets: the tokens this scorer scores (a causal LM's EOS too, when it
        scores it), without running the model."""
        return self.pool(self.prepare_all(texts)).targets

    # ---- device helpers shared by the model adapters
    def preferred_budget(self) -> int:
        """Tokens per batch when none is configured: on a GPU what half its free memory holds (at most
        4 × ``gpu_budget``), on a CPU this scorer's default."""
        if not self.device.startswith("cuda"):
            return self.default_budget
        if not self.bytes_per_token:
            return self.gpu_budget
        import torch

        free, _ = torch.cuda.mem_get_info(torch.device(self.device))
        return int(np.clip(free // 2 // self.bytes_per_token, 1024, 4 * self.gpu_budget))

    def release_memory(self) -> None:
        """Free cached accelerator memory after an out-of-memory error."""
        import torch

        if self.device.startswith("cuda") and torch.cuda.is_available():
            torch.cuda.empty_cache()

    def load_model(self, auto_class: Any, model: str, device: str, dtype: str, loaded: tuple[Any, Any] | None = None,
                   fingerprint_of: str | None = None, **options: Any) -> None:
        """Resolve ``device`` and ``dtype``, load ``model`` with ``auto_class`` (or take the in-memory ``loaded``
        (tokenizer, model) pair), place it, and name it for the signature by the bytes it was loaded from
        (``load_named``)."""
        from .loading import load_named, resolve_device, resolve_dtype

        self.model_name, self.device = model, resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        if loaded:
            (self.tokenizer, self.model), self.model_tag = loaded, f"{model}@in-memory"
        else:
            self.tokenizer, self.model, self.model_tag = load_named(auto_class, model, fingerprint_of, **options)
        self.place(self.model)
        self.dtype_name = str(self.dtype).removeprefix("torch.")

    def read_context(self, options: Any, model: str, following: bool = False) -> None:
        """Take the ``context`` option of a scorer of ``model`` that reads each text after its context (and, where
        ``following``, before the utterances after it): a fast tokenizer tells the context's tokens apart."""
        self.context, self.contexts_cut = Context.of(options), 0  # contexts cut further to fit the positions
        if self.context is not None and not self.tokenizer.is_fast:
            raise ConfigError(f"model {model!r}: context needs a fast tokenizer (tokenizer.json), to tell its tokens "
                              "from the hypothesis's")
        if self.context is not None and self.context.following and not following:
            raise ConfigError(f"context.following={self.context.following}: a {self.kind} scorer reads only what "
                              "comes before the hypothesis (following is for pll; use 0)")

    def signed(self, context: Any) -> str:
        """The signature this scorer would have reading ``context`` (a scorer without context: its own)."""
        return self.signature

    @property
    def store_key(self) -> str:
        """What the score store keys on: the signature, save that a context re-ranked in order is keyed as a
        first-pass one (a score depends only on the text read, context included, so the two share their scores)."""
        if self.context is None or not self.context.reranked:
            return self.signature
        return self.signed(replace(self.context, source="first_pass"))

    def contexts_cut_in(self, texts: Sequence[str]) -> int:
        """How many of the distinct ``texts`` have their context cut further than ``context.tokens``, to fit the
        model's positions (whatever the store already holds: they are prepared again, not scored)."""
        before = self.contexts_cut
        self.prepare_all(list(dict.fromkeys(texts)))
        return self.contexts_cut - before

    def place(self, model: Any) -> Any:
        """``model`` on the scorer's device; with ``compile``, each of its layers ``torch.compile``d."""
        import torch

        model.to(self.device)
        if self.compile:
            for stack in [m for m in model.modules() if isinstance(m, torch.nn.ModuleList)]:
                for layer in stack:
                    layer.compile(dynamic=True)
        return model

    def to_device(self, array: np.ndarray) -> Any:
        """A host array as a tensor on the scorer's device (from pinned memory, asynchronously, on a GPU)."""
        import torch

        tensor = torch.from_numpy(np.ascontiguousarray(array))
        if self.device.startswith("cuda"):
            return tensor.pin_memory().to(self.device, non_blocking=True)
        return tensor

    def to_host(self, tensor: Any) -> Callable[[], np.ndarray]:
        """Start copying ``tensor`` to the host; the returned function waits for the copy. The engine calls it
        after launching the next batch, so the batch loop never makes the GPU wait for the host."""
        import torch

        if not self.device.startswith("cuda"):
            array = tensor.numpy()
            return lambda: array
        copy = tensor.to("cpu", non_blocking=True)
        ready = torch.cuda.Event()
        ready.record()

        def wait() -> np.ndarray:
            ready.synchronize()
            return copy.numpy()
        return wait

    def _signature(self, **parts: Any) -> str:
        return signature(self.kind, signature(**parts), self.normaliser.signature, TOOL)


def token_bytes(config: Any, vocabulary_logits: bool = False) -> int:
    """GPU bytes one batch token costs: a layer's activations in bf16 with 2× headroom, plus fp32 log-softmax
    over the vocabulary when every position's logits are kept (causal LMs)."""
    hidden = config.hidden_size
    intermediate = getattr(config, "intermediate_size", None) or 4 * hidden
    return 4 * (4 * hidden + 2 * intermediate) + (10 * config.vocab_size if vocabulary_logits else 0)


def no_grad_context(device: str, dtype: Any) -> contextlib.AbstractContextManager:
    """``inference_mode`` plus autocast to ``dtype`` (fp32 runs plain; on a CPU only when asked for, as ``auto``
    is fp32 there)."""
    import torch

    stack = contextlib.ExitStack()
    stack.enter_context(torch.inference_mode())
    if dtype != torch.float32:
        stack.enter_context(torch.autocast("cuda" if device.startswith("cuda") else "cpu", dtype=dtype))
    return stack
