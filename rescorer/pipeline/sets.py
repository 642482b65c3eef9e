"""Read an experiment's sets and its metric; the tuning set."""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from ..errors import ConfigError
from ..io import metric_defaults, metric_for
from ..io.formats import facts
from ..io.sets import Corpus
from ..log import info
from ..metrics import Metric, make_metric
from ..types import NBest


def read_sets(corpus: Corpus) -> tuple[dict[str, NBest], Metric]:
    """Every set of ``corpus`` read (subsets applied), and the metric it is judged by."""
    sets = {name: spec.read() for name, spec in corpus.sets.items()}
    return sets, metric_of(corpus.metric.get("name", "auto"), [n.fmt for n in sets.values()], corpus.metric_options)


def metric_of(name: str, formats: Iterable[str], options: Mapping[str, Any]) -> Metric:
    """Metric ``name`` (``auto``: by the lists' ``formats``) with ``options``, and the options those formats call
    for where not given (BLEU of Moses output compares lower-cased text; a line says so)."""
    formats = list(formats)
    name = metric_for(name, formats)
    defaults = {k: v for k, v in metric_defaults(name, formats).items() if k not in options}
    if defaults:
        given = ", ".join(f"{k}={str(v).lower()}" for k, v in defaults.items())
        which = ", ".join(sorted({f for f in formats if facts(f).bleu_defaults}))
        info(f"rescorer: BLEU with {given}, as {which} output is conventionally lower-cased and tokenised "
             f"(data.metric.{next(iter(defaults))}=false to change it)")
    return make_metric(name, **defaults, **options)


def one_of_the_sets(tune_on: str, names: list[str]) -> str:
    """``tune_on`` if it names one of the sets ``names``, else an error naming them."""
    if tune_on not in names:
        raise ConfigError(f"task.tune_on={tune_on!r} is not one of the sets (choose from {', '.join(names)})")
    return tune_on


def tuning_set(labelled: list[str], tune_on: str | None, names: list[str] | None = None) -> str:
    """``tune_on``, else the first set with references whose name starts with ``dev``, else the first with
    references (``labelled``: the sets that have them, of all ``names``)."""
    names = labelled if names is None else names
    if not names:
        raise ConfigError("no sets to tune on")
    if tune_on is None:
        if not labelled:
            raise ConfigError(f"no set has references to tune on ({', '.join(names)}): give one set refs=, or apply "
                              "weights tuned earlier with task=apply task.tuned=PATH")
        return next((n for n in labelled if n.startswith("dev")), labelled[0])
    one_of_the_sets(tune_on, names)
    if tune_on not in labelled:
        raise ConfigError(f"task.tune_on={tune_on!r} has no references to tune on (sets with references: "
                          f"{', '.join(labelled) or 'none'})")
    return tune_on
