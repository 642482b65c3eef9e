"""Hydra tasks: one thin module per task (``conf/task/<name>.yaml`` → ``rescorer.tasks.<name>.run(cfg)``),
and what they share in turning a config into library calls. Task modules never import each other."""
from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from omegaconf import DictConfig, OmegaConf

from ..context import OPTIONS as CONTEXT_OPTIONS
from ..engine import ENGINE_KEYS, BoundScorer, EngineSettings, load_scorers, task_threads
from ..errors import ConfigError, RescorerError, check_known
from ..io import FORMAT
from ..metrics import METRICS
from ..options import MAPPING, RUN, Option, RunOptions
from ..paths import CONF, DEMO, root
from ..scorers import KINDS, option_names
from ..shipped import package_dir, shipped_model

if TYPE_CHECKING:
    from ..outdir import OutDir

# Config keys that mean the same in every task whose config has them; a task module adds its own keys as
# ``OPTIONS``. Each is checked before the task runs, read by it or not, so that a malformed value is refused rather
# than ignored (the readers check what depends on other values).
OPTIONS = {"task.columns": Option("mapping", null=True, example="{ctc: {range: [0, 1], step: 0.1}}"),
           "task.tune_on": Option("text", null=True), "task.fmt": FORMAT,
           "data.metric": MAPPING, "data.metric.name": Option("text", choices=("auto", *METRICS))}
ABSENT = object()


def register_resolvers() -> None:
    """``${root:}`` is the repository root (the current directory for an installed package), ``${demo:}`` the
    shipped demo excerpt, ``${pkg:NAME}`` an installed package's directory and ``${shipped:NAME}`` a shipped
    model's directory (built and cached on first use)."""
    if not OmegaConf.has_resolver("root"):
        OmegaConf.register_new_resolver("root", lambda: str(root()))
    if not OmegaConf.has_resolver("demo"):
        OmegaConf.register_new_resolver("demo", lambda: str(DEMO))
    if not OmegaConf.has_resolver("pkg"):
        OmegaConf.register_new_resolver("pkg", lambda name: str(package_dir(name)))
    if not OmegaConf.has_resolver("shipped"):
        OmegaConf.register_new_resolver("shipped", shipped_model)


def user_error(err: BaseException) -> str | None:
    """The one-line message of an error the user can fix (ours, or a config value Hydra or OmegaConf refused,
    unwrapped from Hydra's instantiation wrapper); None for anything else."""
    from hydra.errors import InstantiationException
    from omegaconf.errors import OmegaConfBaseException

    while isinstance(err, InstantiationException) and err.__cause__ is not None:
        err = err.__cause__
    if isinstance(err, (RescorerError, OmegaConfBaseException)):
        return " ".join(str(err).split("\n")[0].split())
    if isinstance(err, InstantiationException):
        return " ".join(str(err).split())
    return None


def check_keys(cfg: DictConfig, group: str, option: str) -> None:
    """Refuse keys of ``cfg[group]`` that ``conf/<group>/<option>.yaml`` does not define (a misspelt ``+task.x``)."""
    path = CONF / group / f"{option}.yaml"
    if not path.is_file() or cfg.get(group) is None:
        return
    node = OmegaConf.load(path)
    known = set(node) - {"defaults"}
    for parent in node.get("defaults") or []:  # `base` extends another option; `/group@key: option` adds `key`
        if isinstance(parent, str) and (CONF / group / f"{parent}.yaml").is_file():
            known |= set(OmegaConf.load(CONF / group / f"{parent}.yaml")) - {"defaults"}
        elif not isinstance(parent, str):
            known |= {str(k).rpartition("@")[2] for k in parent if "@" in str(k)}
    if known:
        check_known(f"{group} key", cfg[group], known)


def readable_keys(path: tuple[str, ...], node: Mapping[str, Any]) -> set[str] | None:
    """The keys the reader of the config node at ``path`` takes, which a ``+key`` may add: those the node has, the
    engine settings, the parameters of the class a section's ``_target_`` names, a scorer entry's options; None (any
    key) below a section (a new data set or column, a training stage's option), where each reader checks its own."""
    if len(path) == 1 and path[0] == "engine":
        return set(node) | ENGINE_KEYS
    if path == ("scorer",):
        return None  # +scorer.NAME={kind: …, model: …} adds a column
    if len(path) == 1:
        parameters = target_parameters(node.get("_target_"))
        return None if parameters is None else set(node) | parameters
    if len(path) == 2 and path[0] == "scorer":
        return set(node) | (option_names(node["kind"]) if node.get("kind") in KINDS else set())
    if len(path) == 3 and path[0] == "scorer" and path[2] == "context":
        return set(node) | set(CONTEXT_OPTIONS)
    return None if path else set(node)


def target_parameters(target: Any) -> set[str] | None:
    """The parameters of the class a ``_target_`` names, None where it takes any keyword; none for a function (a
    task's ``run(cfg)`` reads the node itself) or a name that does not import (instantiating it will say so)."""
    module, _, name = str(target).rpartition(".")
    try:
        found = getattr(importlib.import_module(module), name)
    except Exception:  # None, or a name that does not import
        return set()
    if not inspect.isclass(found):
        return set()
    parameters = inspect.signature(found).parameters.values()
    if any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters):
        return None
    return {parameter.name for parameter in parameters if parameter.kind is not inspect.Parameter.VAR_POSITIONAL}


def run_task(cfg: DictConfig) -> Any:
    """Run the function the task config's ``_target_`` names, after refusing unknown task keys and values of the
    wrong kind (the run options checked here, once), with ``engine.threads`` torch threads."""
    name = cfg.task.name
    if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
        raise ConfigError(f"task.name={name!r} is not a task")
    if name not in task_names():
        raise ConfigError(f"task.name={name!r} is not a task (choose from {', '.join(task_names())})")
    target = cfg.task.get("_target_")
    if target != f"rescorer.tasks.{name}.run":
        raise ConfigError(f"task.name={name!r} does not match the task config ({target}): choose the task with "
                          f"task={name}, not task.name")
    check_keys(cfg, "task", name)
    module, _, function = target.rpartition(".")
    task = importlib.import_module(module)
    check_options(cfg, {**OPTIONS, **getattr(task, "OPTIONS", {})})
    RunOptions.of(plain(cfg.task), "task.")
    with task_threads(EngineSettings.of(plain(cfg.get("engine"))).threads):  # every task, training included
        return getattr(task, function)(cfg)


def check_options(cfg: DictConfig, options: Mapping[str, Option]) -> None:
    """Every key of ``options`` (dotted: ``task.base.name``) the config has, checked by its option, in order (a
    mapping before the keys inside it)."""
    for key, option in options.items():
        value = OmegaConf.select(cfg, key, default=ABSENT)
        if value is not ABSENT:
            option.check(key, plain(value))


def run_options(cfg: DictConfig) -> RunOptions:
    """The task's run options (``bootstrap``, ``seed``, ``halves``) as :func:`run_task` checked them."""
    return RunOptions(**{key: value for key, value in plain(cfg.task).items() if key in RUN})


def task_names() -> list[str]:
    return sorted(p.stem for p in Path(__file__).parent.glob("*.py") if not p.stem.startswith("_"))


def task_options(cfg: DictConfig) -> dict[str, Any]:
    """The task's own options: ``cfg.task`` as plain containers without ``_target_`` and ``name``."""
    return {key: value for key, value in plain(cfg.task).items() if key not in ("_target_", "name")}


def plain(node: Any) -> Any:
    """A config node as plain Python containers, interpolations resolved."""
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) or OmegaConf.is_config(node) else node


def scorer_specs_of(cfg: DictConfig) -> dict[str, dict[str, Any]]:
    """The selected ``scorer`` group entries as plain options (column name → options)."""
    return {name: spec for name, spec in (plain(cfg.get("scorer")) or {}).items() if spec is not None}


def scorers_of(cfg: DictConfig) -> dict[str, BoundScorer]:
    """The selected ``scorer`` group entries (column name → scorer), built with ``engine.*``."""
    return load_scorers(scorer_specs_of(cfg), plain(cfg.engine))


def out_dir_of(cfg: DictConfig, sets: Mapping[str, Any]) -> "OutDir | None":
    """``out_dir`` checked for a run writing ``sets`` (see :func:`~rescorer.pipeline.outputs.checked_out_dir`),
    before a scorer opens the configured score store, which it may not hold either."""
    from ..pipeline.outputs import checked_out_dir

    return checked_out_dir(cfg.out_dir, sets, {}, [(plain(cfg.get("engine")) or {}).get("store")])


def data_given(cfg: DictConfig) -> bool:
    """Whether ``data`` was given (``data=…``, ``data.sets…``, an experiment's): it is not the default data group of
    ``conf/config.yaml`` as its file has it."""
    defaults = OmegaConf.load(CONF / "config.yaml").get("defaults") or []
    name = next((entry["data"] for entry in defaults if isinstance(entry, Mapping) and "data" in entry), None)
    if name is None or cfg.get("data") is None:
        return cfg.get("data") is not None
    default = OmegaConf.to_container(OmegaConf.load(CONF / "data" / f"{name}.yaml"), resolve=False)
    return OmegaConf.to_container(cfg.data, resolve=False) != default


def data_of(cfg: DictConfig) -> Any:
    """The ``data`` group as a :class:`~rescorer.io.sets.Corpus`."""
    from hydra.utils import instantiate

    return instantiate(cfg.data, _convert_="all")
