"""Language-model scorers: ``load_scorer(kind, model, **options)``."""
from __future__ import annotations

from typing import Any, Mapping

from ..engine import EngineConfig
from ..engine.scale import ScaleConfig
from ..errors import ConfigError
from ..normalise import Normaliser
from ..types import NBest
from .base import Scorer

KINDS = ("pll", "ll", "student", "pcfg")


def load_scorer(kind: str, model: str, *, case: str = "keep", append_period: bool = False,
                store: Any = None, budget: int | None = None, progress: bool | None = None,
                compile: bool = False, scale: Mapping[str, Any] | None = None, **options: Any) -> Scorer:
    """A scorer with ``.score(texts)`` and ``.token_scores(texts)``.

    ``kind``: ``pll`` (masked LM; ``variant=``, ``words=``), ``ll`` (causal LM; ``bos=``, ``score_eos=``,
    ``gguf_file=``), ``student`` (a distilled one-pass PLL student, ``task=distill``) or ``pcfg`` (a grammar's
    exact conditionals: ``model`` is a rule file or a treebank, ``variant=masked|causal``, ``oov=``).
    Common options: ``case``, ``append_period``, ``store`` (SQLite path), ``budget`` (tokens per batch, padding
    counted), ``device``, ``dtype``, ``revision``, ``trust_remote_code``, ``compile`` (torch.compile each
    layer), ``scale`` (a
    :class:`~rescorer.engine.scale.ScaleConfig` as a mapping: score with Ray actors or one process per GPU).
    """
    scorer = _build(kind, model, dict(normaliser=Normaliser(case, append_period), store=store,
                                      engine=EngineConfig(budget=budget, progress=progress, compile=compile,
                                                          scale=ScaleConfig.of(scale) if scale else None)), options)
    if "loaded" not in options:  # what a worker needs to build the same scorer (in-memory models stay local)
        scorer.spec = dict(kind=kind, model=model, case=case, append_period=append_period, budget=budget,
                           compile=compile, **options)
    return scorer


def _build(kind: str, model: str, common: dict[str, Any], options: dict[str, Any]) -> Scorer:
    if kind == "pll":
        from .masked import MaskedLMScorer

        return MaskedLMScorer(model, **options, **common)
    if kind == "ll":
        from .causal import CausalLMScorer

        return CausalLMScorer(model, **options, **common)
    if kind == "pcfg":
        from .pcfg import PCFGScorer

        return PCFGScorer(model, **options, **common)
    if kind == "student":
        from .student import StudentScorer

        return StudentScorer(model, **options, **common)
    raise ConfigError(f"unknown scorer kind {kind!r} (choose from {', '.join(KINDS)})")


def score_nbest(nbest: NBest, scorers: Mapping[str, Scorer]) -> tuple[NBest, dict[str, list[int]]]:
    """``nbest`` with one column per scorer (its name), every hypothesis scored through the engine and store,
    and each column's scored-token count per hypothesis (the lengths its penalties use)."""
    texts = nbest.texts()
    results = {name: scorer.compute(texts) for name, scorer in scorers.items()}
    columns = {name: [total for total, _ in scored] for name, scored in results.items()}
    return nbest.with_columns(columns), {name: [len(t) for _, t in scored] for name, scored in results.items()}


__all__ = ["KINDS", "Scorer", "load_scorer", "score_nbest"]
