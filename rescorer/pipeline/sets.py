"""Read an experiment's sets and its metric; the tuning set."""
from __future__ import annotations

from ..errors import ConfigError
from ..io.sets import Corpus
from ..metrics import Metric, make_metric
from ..types import NBest


def read_sets(corpus: Corpus) -> tuple[dict[str, NBest], Metric]:
    """Every set of ``corpus`` read (subsets applied), and the metric it is judged by."""
    return {name: spec.read() for name, spec in corpus.sets.items()}, make_metric(corpus.metric_name,
                                                                                 **corpus.metric_options)


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
    if tune_on not in names:
        raise ConfigError(f"task.tune_on={tune_on!r} is not one of the sets ({', '.join(names)})")
    if tune_on not in labelled:
        raise ConfigError(f"task.tune_on={tune_on!r} has no references to tune on (sets with references: "
                          f"{', '.join(labelled) or 'none'})")
    return tune_on
