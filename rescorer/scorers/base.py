"""What every scorer is: a signature, a way to turn a text into model rows, and the public score API."""
from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from .. import __version__
from ..engine import EngineConfig, EngineStats, run
from ..metrics import Perplexity
from ..normalise import Normaliser
from ..store import ScoreStore


class Scorer(ABC):
    """A sentence scorer. Subclasses say how a text becomes rows; the engine batches and runs them."""

    kind: str = "scorer"
    default_budget: int = 1024      # tokens per batch on the CPU (moderate budgets are fastest there)
    gpu_budget: int = 32768         # tokens per batch on a GPU (large batches keep it busy)
    device: str = "cpu"
    spec: dict[str, Any] | None = None  # load_scorer's arguments: how a worker process rebuilds this scorer
    bytes_per_token: int = 0        # GPU memory a batch token costs (0: no budget from free memory)

    def __init__(self, normaliser: Normaliser | None = None, store: str | Path | ScoreStore | None = None,
                 engine: EngineConfig | None = None):
        self.normaliser = normaliser or Normaliser()
        self.store = ScoreStore(store) if isinstance(store, (str, Path)) else store
        self.engine = engine or EngineConfig()
        self.last_stats = EngineStats()

    # ---- what a subclass provides
    @property
    @abstractmethod
    def signature(self) -> str:
        """Everything that changes the numbers, as ``key:value|…`` (the score store's key)."""

    @abstractmethod
    def prepare(self, text: str) -> Any:
        """Tokenize one scored text into whatever ``forward`` needs."""

    @abstractmethod
    def num_rows(self, sentence: Any) -> int:
        """Model rows this sentence needs (masked copies, or 1 for a causal pass)."""

    @abstractmethod
    def row_length(self, sentence: Any) -> int:
        """Tokens in each of its rows, special tokens included (what a batch pads to)."""

    @abstractmethod
    def num_targets(self, sentence: Any) -> int:
        """Scored tokens of the sentence."""

    @abstractmethod
    def targets(self, sentence: Any, row: int) -> slice:
        """Which scored tokens ``row`` produces."""

    @abstractmethod
    def forward(self, rows: Sequence[tuple[Any, int]]) -> list[Any] | Callable[[], list[Any]]:
        """Log-probs (natural log, fp32) of the targets of each (sentence, row), or a function returning them
        once the device has them (``to_host``): the engine launches the next batch before it asks."""

    @property
    def budget(self) -> int:
        """The token budget per batch: the configured one; else on a GPU what half its free memory holds
        (at most 4 × ``gpu_budget``), on a CPU this scorer's default."""
        if self.engine.budget:
            return self.engine.budget
        if not self.device.startswith("cuda"):
            return self.default_budget
        if not self.bytes_per_token:
            return self.gpu_budget
        import torch

        free, _ = torch.cuda.mem_get_info(torch.device(self.device))
        return int(np.clip(free // 2 // self.bytes_per_token, 1024, 4 * self.gpu_budget))

    def release_memory(self) -> None:
        """Free cached accelerator memory after an out-of-memory error."""

    def place(self, model: Any) -> Any:
        """``model`` on the scorer's device; with ``engine.compile``, each of its layers ``torch.compile``d."""
        import torch

        model.to(self.device)
        if self.engine.compile:
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

    # ---- the public API
    def _signature(self, **parts: Any) -> str:
        fields = "|".join(f"{k}:{v}" for k, v in parts.items())
        return f"{self.kind}|{fields}|{self.normaliser.signature}|rescorer:{__version__}"

    def scored_texts(self, texts: Sequence[str]) -> list[str]:
        return [self.normaliser(t) for t in texts]

    def compute(self, texts: Sequence[str], normalise: bool = True) -> list[tuple[float, list[float]]]:
        """(total, per-token scores) of each text; ``normalise=False`` scores the texts exactly as given
        (prompts and templates whose newlines must survive)."""
        scored = self.scored_texts(texts) if normalise else list(texts)
        results, self.last_stats = run(self, scored, self.store, self.engine)
        return [results[t] for t in scored]

    def score(self, texts: Sequence[str]) -> list[float]:
        """Summed log-score of each text (natural log, higher = better)."""
        return [total for total, _ in self.compute(texts)]

    def token_scores(self, texts: Sequence[str]) -> list[list[float]]:
        """Per-token log-probs of each text, in token order (special tokens never scored)."""
        return [tokens for _, tokens in self.compute(texts)]

    def perplexity(self, texts: Sequence[str]) -> Perplexity:
        """Token- and word-level (pseudo-)perplexity of ``texts`` (words of the scored text)."""
        return Perplexity.of(self.token_scores(texts), self.scored_texts(texts))


def token_bytes(config: Any, vocabulary_logits: bool = False) -> int:
    """GPU bytes one batch token costs: a layer's activations in bf16 with 2× headroom, plus fp32 log-softmax
    over the vocabulary when every position's logits are kept (causal LMs)."""
    hidden = config.hidden_size
    intermediate = getattr(config, "intermediate_size", None) or 4 * hidden
    return 4 * (4 * hidden + 2 * intermediate) + (10 * config.vocab_size if vocabulary_logits else 0)


def no_grad_context(device: str, dtype: Any) -> contextlib.AbstractContextManager:
    """``inference_mode`` plus autocast to ``dtype`` on GPU (fp32 runs plain)."""
    import torch

    stack = contextlib.ExitStack()
    stack.enter_context(torch.inference_mode())
    if device.startswith("cuda") and dtype != torch.float32:
        stack.enter_context(torch.autocast("cuda", dtype=dtype))
    return stack
