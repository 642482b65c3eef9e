"""Language-model scorers as model adapters: ``load_adapter(kind, model, **options)``.

A scorer turns texts into model rows and rows into log-probs; ``rescorer.engine`` runs them (batching, the
score store, scale-out). ``rescorer.load_scorer`` gives both in one object with ``.score(texts)``.
"""
from __future__ import annotations

from typing import Any

from ..errors import ConfigError, UnknownNameError, check_known
from ..options import keywords
from ..normalise import Normaliser
from .base import Scorer

KINDS = ("pll", "ll", "student", "pcfg")
PRETRAINED_KINDS = ("pll", "ll", "student")
CONTEXT_KINDS = ("ll", "pll", "student")  # a student reads the context its teacher read, if it learnt with one


def load_adapter(kind: str, model: str | None, *, case: str | None = None, append_period: bool | None = None,
                compile: bool = False, **options: Any) -> Scorer:
    """The model adapter of ``kind``: ``pll`` (masked LM; ``variant=``, ``words=``), ``ll`` (causal LM;
    ``bos=``, ``score_eos=``, ``gguf_file=``), ``student`` (a distilled one-pass PLL student, ``task=distill``)
    or ``pcfg`` (a grammar's exact conditionals: ``model`` is a rule file or a treebank, ``variant=masked|causal``,
    ``oov=``). Common options: ``case``, ``append_period`` (unset: keep, no period; a student: the normalisation
    it was trained with), ``device``, ``dtype``, ``revision``, ``trust_remote_code``, ``compile`` (torch.compile
    each layer), ``loaded`` (an in-memory (tokenizer, model)); ``ll``, ``pll`` and ``student`` also ``context``
    (what was said before each text: :class:`~rescorer.context.Context`)."""
    if options.get("context") and kind not in CONTEXT_KINDS:
        raise ConfigError(f"a {kind} scorer reads no context (those that do: {', '.join(CONTEXT_KINDS)}); "
                          "remove its context option")
    check_known(f"{kind} scorer option", options, option_names(kind) - {"model", "kind"})
    if kind == "student":  # it knows its normalisation
        common: dict[str, Any] = dict(case=case, append_period=append_period, compile=compile)
    else:
        common = dict(normaliser=Normaliser("keep" if case is None else case, bool(append_period)), compile=compile)
    if kind in PRETRAINED_KINDS and model is not None and "loaded" not in options:
        from .loading import local_only

        local_only(str(model), options.get("revision"), options.get("gguf_file"))  # fails before torch loads
    scorer = adapter_class(kind)(model, **options, **common)
    if "loaded" not in options and "grammar" not in options:  # how a worker rebuilds it (in-memory models stay here)
        scorer.spec = dict(kind=kind, model=model, case=case, append_period=append_period, compile=compile, **options)
    return scorer


def adapter_class(kind: str) -> type[Scorer]:
    """The model adapter class of ``kind`` (imported on first use)."""
    if kind == "pll":
        from .masked import MaskedLMScorer

        return MaskedLMScorer
    if kind == "ll":
        from .causal import CausalLMScorer

        return CausalLMScorer
    if kind == "pcfg":
        from .pcfg import PCFGScorer

        return PCFGScorer
    if kind == "student":
        from .student import StudentScorer

        return StudentScorer
    raise UnknownNameError("scorer kind", kind, KINDS)


def option_names(kind: str) -> set[str]:
    """Every option ``load_adapter(kind, ...)`` takes by name, the adapter's own and its base class's included."""
    cls = adapter_class(kind)
    named = set().union(*(keywords(f)[0] for f in (load_adapter, *(c.__init__ for c in cls.__mro__[:-1]))))
    return named - {"self", "normaliser"}  # the normaliser is made from case and append_period


__all__ = ["KINDS", "Scorer", "adapter_class", "load_adapter", "option_names"]
