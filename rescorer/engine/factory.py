"""The one scorer factory: ``engine.*`` settings applied the same way for every task, recipe and Python user."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping

from ..errors import ConfigError, check_known
from ..options import TEXT, Option, checked
from ..scorers import KINDS, load_adapter
from ..scorers.loading import DEVICE_NAMES, DEVICES, DTYPES
from .bound import BoundScorer
from .cores import engine_threads
from .runner import Engine


@dataclass(frozen=True)
class EngineSettings:
    """``engine.*``: where models run (``device``, ``dtype``, ``compile``), how rows are run (``budget``,
    ``progress``, ``threads``: None for :func:`~rescorer.engine.cores.default_threads`), where scores are kept
    (``store``) and whether workers help (``scale``)."""

    name: str = "local"
    device: str = "auto"
    dtype: str = "auto"
    compile: bool = False
    budget: int | None = None
    progress: bool | None = None
    store: str | None = None
    scale: Mapping[str, Any] | None = None
    threads: int | None = None

    @classmethod
    def of(cls, options: Mapping[str, Any] | None) -> "EngineSettings":
        """From an ``engine`` mapping; an unknown key or a value of the wrong kind is an error naming it."""
        options = dict(Option("mapping", null=True).check("engine", options) or {})
        check_known("engine key", options, ENGINE_KEYS)
        return cls(**checked("engine.", options, ENGINE_OPTIONS))

    def engine(self) -> Engine:
        """The engine these settings describe; ``threads`` (or the default) becomes the process's torch thread count,
        unless a task run set it already (:func:`~rescorer.engine.cores.engine_threads`)."""
        from .scale import ScaleConfig

        engine_threads(self.threads)
        scale = ScaleConfig.of(self.scale) if self.scale else None
        return Engine(store=self.store, budget=self.budget, progress=self.progress, scale=scale)

    @property
    def model_options(self) -> dict[str, Any]:
        return {"device": self.device, "dtype": self.dtype, "compile": self.compile}


ENGINE_KEYS = frozenset(f.name for f in fields(EngineSettings))
SCORER = {"kind": TEXT, "model": Option("path", null=True)}
ENGINE_OPTIONS = {"device": Option("text", pattern=DEVICES, example=DEVICE_NAMES),
                  "dtype": Option("text", choices=DTYPES), "budget": Option("integer", low=1, high=1 << 24, null=True),
                  "threads": Option("integer", low=1, high=4096, null=True),
                  "compile": Option("flag"), "progress": Option("flag", null=True), "store": Option("path", null=True),
                  "scale": Option("mapping", null=True)}


def split_options(options: Mapping[str, Any]) -> tuple[EngineSettings, dict[str, Any]]:
    """``engine.*`` settings and the scorer's own options, from one mapping holding both."""
    return (EngineSettings.of({k: v for k, v in options.items() if k in ENGINE_KEYS}),
            {k: v for k, v in options.items() if k not in ENGINE_KEYS})


def load_scorer(kind: str, model: str | None = None, *, engine: Engine | None = None, **options: Any) -> BoundScorer:
    """A scorer of ``kind`` on ``model`` run by an engine.

    :param kind: ``pll``, ``ll``, ``student`` or ``pcfg``.
    :param model: a local model directory (``~`` expanded), a ``.gguf`` file, a hub name, or a grammar (``pcfg``).
    :param engine: an existing engine to share (its store) instead of one made from ``options``.
    :param options: ``engine.*`` settings (``store``, ``budget``, ``progress``, ``threads``, ``scale``, ``device``,
        ``dtype``, ``compile``) and the scorer's own (see :func:`rescorer.scorers.load_adapter`); an unknown one
        is refused by name.
    :returns: a :class:`BoundScorer`: ``.score(texts)`` gives each text's summed log-probability (natural log),
        ``.token_scores``, ``.compute`` and ``.perplexity`` the rest.
    :raises rescorer.RescorerError: in one line, for a model that cannot be loaded or an option it does not take.

    Example::

        import rescorer

        student = rescorer.load_scorer("student", rescorer.shipped.shipped_model("student_mse"), store=None)
        print(student.score(["the cat sat on the mat", "the cat sat on the hat"]))  # [-…, -…]
    """
    checked("", {"kind": kind, "model": model}, SCORER)
    settings, own = split_options(options)
    adapter = load_adapter(kind, model, **{**settings.model_options, **own})
    return BoundScorer(adapter, engine or settings.engine())


def load_scorers(specs: Mapping[str, Mapping[str, Any]] | None, engine: Mapping[str, Any] | None) -> dict[str, BoundScorer]:
    """The scorers of a config's ``scorer`` group (column name → scorer options) with the ``engine`` settings,
    sharing one engine and store."""
    shared = EngineSettings.of(engine).engine()
    for name, spec in Option("mapping", null=True).check("scorers", specs or {}).items():
        Option("mapping", null=True, example="load_scorer options {kind, model, …}").check(f"scorer {name!r}", spec)
        if spec is not None and "kind" not in spec:
            raise ConfigError(f"scorer {name!r} names no kind: give it kind: {' | '.join(KINDS)} (and its model)")
    return {name: load_scorer(**{**(engine or {}), **spec}, engine=shared).named(name)
            for name, spec in (specs or {}).items() if spec is not None}
