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


def tuning_set(names: list[str], tune_on: str | None) -> str:
    """``tune_on``, else the first set whose name starts with ``dev``, else the first set."""
    if not names:
        raise ConfigError("no sets to tune on")
    if tune_on is None:
        return next((n for n in names if n.startswith("dev")), names[0])
    if tune_on not in names:
        raise ConfigError(f"task.tune_on={tune_on!r} is not one of the sets ({', '.join(names)})")
    return tune_on
