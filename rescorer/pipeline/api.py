"""``rescorer.rescore``: the main job in one call, for a toolkit script — no Hydra, no config, files optional."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence, Union

from ..combine import Column, Search
from ..engine import BoundScorer, load_scorers
from ..errors import ConfigError, check_known
from ..io import FORMAT, check_nbest, with_rank
from ..io.sets import SUBSET, NBestSet
from ..metrics import Metric
from ..types import NBest
from ..options import FLAG, TEXT, Option, RunOptions, checked
from ..outdir import OutDir
from .applying import RunPlace
from .outputs import checked_out_dir
from .rescore import Rescored, apply_tuned, rescore_loaded
from .sets import metric_of
from ..tuned.portable import Models
from ..io.inputs import named_inputs, named_paths
from .shards import Shards
from .stream import CHUNK
from ..tuned.file import Tuned

INPUT_SUBSET = {"every": 1, "top": None}  # what a shard keeps of its utterances and hypotheses: all of them
SetLike = Union[NBest, str, Path, Mapping[str, Any]]  # a list read already, a path, or NBestSet options
ScorerLike = Union[BoundScorer, Mapping[str, Any]]    # a loaded scorer, or load_scorer options ({kind, model, …})


ARGUMENTS = {"sets": Option("mapping", null=True), "scorers": Option("mapping", null=True),
             "columns": Option("mapping", null=True, example="{ctc: {range: [0, 1], step: 0.1}}"), "metric": TEXT,
             "base": Option("mapping", fields={"name": Option("text", null=True)}), "out_dir": Option("path", null=True),
             "data": TEXT, "name": TEXT, "engine": Option("mapping", null=True), "fmt": FORMAT,
             "accept_changed_models": FLAG}


def set_of(value: SetLike | NBestSet, where: str) -> NBest | NBestSet:
    """A set as given: an :class:`NBest` (checked; a list without any score gets its order as the column ``rank``,
    :func:`rescorer.io.with_rank`), or an :class:`NBestSet` (a path, or NBestSet options ``{"nbest": PATH, "refs":
    PATH, "fmt": …, "options": …, "every": …, "top": …}``), read when it is used; errors name the argument
    ``where`` (``dev``, ``sets['test']``)."""
    if isinstance(value, NBest):
        return with_rank(check_nbest(value, where))
    if isinstance(value, NBestSet):
        return value
    if isinstance(value, (str, Path)):
        return NBestSet(str(value), where=f"{where}: ")
    if isinstance(value, Mapping):
        check_known(f"{where} key", value, SUBSET)
        return NBestSet(**{k: str(v) if k in ("nbest", "refs") and v is not None else v for k, v in value.items()},
                        where=f"{where}.")
    raise ConfigError(f"{where} must be an NBest, a path or NBestSet options, not {type(value).__name__}")


def as_nbest(value: SetLike | NBestSet, where: str) -> NBest:
    """A set read whole (see :func:`set_of`)."""
    found = set_of(value, where)
    return found if isinstance(found, NBest) else with_rank(found.read())


def rescore(*, sets: Mapping[str, SetLike] | None = None, dev: SetLike | str | None = None,
            scorers: Mapping[str, ScorerLike] | None = None, metric: str | Metric = "auto",
            base: str | Mapping[str, Any] | Column | None = None,
            columns: Mapping[str, Mapping[str, Any] | None] | None = None,
            search: str | Mapping[str, Any] | Search = "fast", out_dir: str | Path | OutDir | None = None,
            engine: Mapping[str, Any] | None = None, bootstrap: int = 1000, seed: int = 0, data: str = "data",
            halves: int = 0, run: RunOptions | None = None, retune: Sequence[str] | str | None = "auto") -> Rescored:
    """Score every set with ``scorers``, tune the interpolation weights on one set, apply them to every set.

    :param sets: NBests, paths, or NBestSet options, by name; a set without references is re-ranked and counted,
        not judged.
    :param dev: the tuning set: the name of one of ``sets``, or a set of its own (named ``dev`` in the report);
        None: the first set with references whose name starts with ``dev``.
    :param scorers: column name → a loaded scorer (:func:`rescorer.load_scorer`) or its options
        (``{"kind": "ll", "model": DIR}``, loaded with ``engine`` settings).
    :param metric: ``wer`` (in percent), ``bleu`` (0–100), ``auto`` (BLEU for MT formats) or a Metric.
    :param base: the column of weight 1 (a name, or ``{name, penalty, alpha}``; None: the one the format ranks by).
    :param columns: the tuned columns (``{name: {range, step, penalty, alpha}}``; default: one per scorer).
    :param retune: the toolkit's own columns re-tuned too (``["lm", "ctc"]``, ``"words"``, ``"all"``, None), or
        ``"auto"``: those the base is made of, where that holds on held halves of ≥ 500 utterances.
    :param search: the weight search (``fast``, ``grid``, ``robust``, or ``{name, **options}``).
    :param out_dir: where the run's files go, as ``task=rescore`` writes them; None: nothing is written.
    :param engine: ``engine.*`` settings for scorers given as options (``store``, ``device``, ``threads``, …).
    :param bootstrap: paired-bootstrap resamples of each set's change (at most 100,000).
    :param seed: the seed of the bootstrap and the search.
    :param data: the data's name in the report.
    :param halves: random half-splits of the tuning set comparing the fast and robust rules (0: none).
    :param run: ``bootstrap``, ``seed`` and ``halves`` as one :class:`~rescorer.options.RunOptions` checked
        already (the command line's); given, the three are not read.
    :returns: the report (``.report``, ``.weights``), the re-ranked lists (``.nbests``) and the tuned rescorer
        (``.tuned``; written as ``tuned.yaml`` with ``out_dir``, for :func:`apply`).
    :raises rescorer.RescorerError: in one line naming it, for an argument, a list, an option or a model that
        cannot work (nothing is written then).

    Example::

        import rescorer

        demo = "recipes/demo/data/dev_other"
        result = rescorer.rescore(sets={"dev_other": {"nbest": demo, "refs": f"{demo}/ref.trn", "every": 10}},
                                  base="score", columns={"lm": {"range": [0, 1], "step": 0.1}})
        print(result)  # Rescored(weights={'lm': …}, dev_other: wer … → …, … of 30 1-bests changed)
    """
    checked("", dict(sets=sets, scorers=scorers, columns=columns, engine=engine, data=data), ARGUMENTS)
    if not isinstance(out_dir, OutDir):
        ARGUMENTS["out_dir"].check("out_dir", out_dir)
    if not isinstance(metric, Metric):
        ARGUMENTS["metric"].check("metric", metric)
    run = run or RunOptions.of(dict(bootstrap=bootstrap, seed=seed, halves=halves))
    search, base = Search.of(search), base_column(base)
    named, tune_on = with_dev({name: as_nbest(value, f"sets[{name!r}]") for name, value in (sets or {}).items()}, dev)
    if not isinstance(metric, Metric):
        metric = metric_of(metric, (n.fmt for n in named.values()), {})
    loaded = {name: s for name, s in (scorers or {}).items() if isinstance(s, BoundScorer)}
    out_dir = checked_out_dir(out_dir, named, loaded, [(engine or {}).get("store")])
    loaded.update(load_scorers({name: s for name, s in (scorers or {}).items() if name not in loaded}, engine))
    tuned = [Column.of(name, spec) for name, spec in columns.items()] if columns else None
    return rescore_loaded(named, {name: loaded[name] for name in scorers or {}}, metric, base=base,
                          columns=tuned, search=search, tune_on=tune_on, run=run, data=data, out_dir=out_dir,
                          retune=retune)


def with_dev(named: dict[str, NBest], dev: SetLike | str | None) -> tuple[dict[str, NBest], str | None]:
    """The sets with ``dev`` among them (a set of its own comes first, named ``dev``) and the name to tune on."""
    tune_on = dev if dev is None or (isinstance(dev, str) and dev in named) else "dev"
    if tune_on == "dev" and dev != "dev":
        if "dev" in named:
            raise ConfigError("a set is named 'dev' and a separate dev set was given: rename one")
        named = {"dev": as_nbest(dev, "dev"), **named}
    return named, tune_on


def base_column(base: str | Mapping[str, Any] | Column | None) -> Column | None:
    """The base column (weight 1) from a name or ``{name, penalty, alpha}`` (no penalty unless given); None: the
    format's own."""
    if base is None or isinstance(base, Column):
        return base
    spec = dict(ARGUMENTS["base"].check("base", {"name": base} if isinstance(base, str) else base))
    name = spec.pop("name", None)
    return Column.of(name, {"penalty": "none", **spec}) if name else None


def applied_sets(sets: SetLike | Mapping[str, SetLike] | None, name: str, inputs: object, out_dir: object,
                 fmt: str, chunk: int, subset: Mapping[str, object]
                 ) -> tuple[dict[str, NBest | NBestSet], dict[Path, str] | None]:
    """The sets an apply reports on: ``sets`` (one list, named ``name``, or ``{name: list}``); or, when the
    ``inputs`` are streamed shard by shard (which needs ``out_dir``, a known ``fmt``, a ``chunk`` ≥ 1 and a valid
    ``subset`` of each: ``every``, ``top``), none and the shards' paths with their output names, checked before any
    model loads."""
    if (inputs is None) == (sets is None):
        raise ConfigError("give either sets (lists read whole) or inputs (shards streamed to out_dir), not "
                          f"{'both' if inputs is not None else 'neither'}")
    if inputs is not None:
        if out_dir is None:
            raise ConfigError("inputs are re-ranked into out_dir/shards/: give out_dir")
        ARGUMENTS["fmt"].check("fmt", fmt)
        Option("integer", low=1).check("chunk", chunk)
        checked("", subset, {key: SUBSET[key] for key in INPUT_SUBSET})
        return {}, named_inputs(inputs)  # type: ignore[arg-type]
    if subset != INPUT_SUBSET:
        raise ConfigError(f"every and top take a subset of the inputs; a set's own subset is given with the set "
                          f"({{'nbest': PATH, 'every': …, 'top': …}}, data.sets.NAME.every), not {dict(subset)}")
    several = isinstance(sets, Mapping) and "nbest" not in sets and not isinstance(sets, NBestSet)
    return {n: set_of(v, f"sets[{n!r}]" if several else "sets")
            for n, v in (sets.items() if several else [(name, sets)])}, None  # type: ignore[union-attr]


def apply(sets: SetLike | Mapping[str, SetLike] | None, tuned: str | Path | Tuned, *,
          out_dir: str | Path | None = None, engine: Mapping[str, Any] | None = None,
          scorers: Mapping[str, BoundScorer] | None = None, accept_changed_models: bool = False,
          bootstrap: int = 1000, seed: int = 0, data: str = "data", name: str = "test", run: RunOptions | None = None,
          models: Models = None, inputs: str | Path | Sequence[str | Path] | None = None, fmt: str = "auto",
          chunk: int = CHUNK, every: int = 1, top: int | None = None) -> Rescored:
    """Re-rank new N-best lists with a tuned rescorer (``tuned.yaml`` from :func:`rescore` or ``task=rescore``):
    score them with its scorers, apply its weights, and report — the metric where the lists have references, the
    counts and changed 1-bests always.

    :param sets: one list (an NBest, a path or NBestSet options, named ``name``) or ``{name: list}``.
    :param tuned: a ``tuned.yaml`` (checked whole before any model loads) or a :class:`Tuned`.
    :param out_dir: where the files go, as ``task=rescore`` writes them; None: nothing is written.
    :param engine: ``engine.*`` settings for the scorers the file names (where and how they run: the file never
        decides that).
    :param scorers: column → a loaded scorer, instead of loading the one the file names (a :class:`Tuned` from
        :func:`rescore` in this process brings the scorers it tuned with, and their store, unless ``engine`` is
        given: what they scored is not scored again).
    :param accept_changed_models: apply even where a scorer's model or options changed since tuning.
    :param bootstrap: paired-bootstrap resamples where a list has references.
    :param seed: the seed of the bootstrap.
    :param data: the data's name in the report.
    :param name: the name of a single list.
    :param run: ``bootstrap`` and ``seed`` as one :class:`~rescorer.options.RunOptions` checked already.
    :param models: where the tuned file's models are when they moved: a directory holding them (by their
        directory name), or ``{column or model name: path}``; each is checked against its tuned content hash.
    :param inputs: instead of ``sets``, a corpus of any size: an N-best file, a directory, a glob, ``@LIST`` (a
        file listing the shards) or a list of these (:func:`rescorer.io.inputs.named_inputs`), each re-ranked to
        ``out_dir/shards/`` in its own format as soon as it is done (``fmt``: their format; ``chunk``: utterances
        scored together; ``every``, ``top``: as a set's); rerun, a killed apply redoes the rest.
    :returns: the report, the re-ranked lists (each made when first read; a corpus's shards are in ``out_dir``)
        and the tuned rescorer.
    :raises rescorer.RescorerError: in one line naming it, for a tuned file, a list or a scorer that cannot be
        used (a changed model, an option a tuned file may not set).

    Example::

        import rescorer

        demo = "recipes/demo/data"
        tuned = rescorer.rescore(sets={"dev": {"nbest": f"{demo}/dev_other", "refs": f"{demo}/dev_other/ref.trn",
                                               "every": 10}}, base="score", columns={"lm": {}}).tuned
        print(rescorer.apply({"nbest": f"{demo}/test_clean", "every": 10}, tuned))  # no references needed
    """
    checked("", dict(scorers=scorers, out_dir=out_dir, engine=engine, accept_changed_models=accept_changed_models,
                     data=data, name=name), ARGUMENTS)
    run = run or RunOptions.of(dict(bootstrap=bootstrap, seed=seed))
    named, shards = applied_sets(sets, name, inputs, out_dir, fmt, chunk, subset := {"every": every, "top": top})
    source = None if isinstance(tuned, Tuned) else str(tuned)
    tuned = (tuned if isinstance(tuned, Tuned) else Tuned.load(tuned)).located(source and Path(source), models)
    given = dict(scorers or (tuned.loaded if engine is None else {}))  # tuned in this process: its scorers
    reads = [source, (engine or {}).get("store"), *(scorer.store_path for scorer in given.values())]
    if shards is None:
        place: RunPlace | OutDir | None = checked_out_dir(out_dir, named, {}, reads)
    else:  # the output folder is opened once the models are checked and loaded
        place = Shards.of(out_dir, shards, tuned, subset, [*named_paths(inputs), *reads])  # type: ignore[arg-type]
        named = {shards[path]: NBestSet(str(path), fmt=fmt, **subset) for path in shards}  # type: ignore[arg-type]
    ordered = tuned.bound(given, engine, source or "tuned", accept_changed_models)
    return apply_tuned(named, tuned, ordered, place=place, run=run, data=data, source=source, chunk=chunk)
