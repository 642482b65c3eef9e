"""The single ``rescorer`` command: a Hydra app dispatching to ``rescorer.tasks.<task>.run``; ``--help`` and
``--version`` are answered before Hydra starts, a misspelt group, option or key is refused before it composes,
and Ctrl-C (or SIGTERM) at any moment is one line and exit 130 (143)."""
from __future__ import annotations

import argparse
import contextlib
import errno
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any, Iterator, NoReturn

GROUPS = ("data", "scorer", "model", "engine", "search", "pairs", "experiment")


SIGNAL_STATUS = {signal.SIGINT: 130, signal.SIGTERM: 143}  # 128 + the signal, as a shell reports it


def remove_own_staging() -> None:
    """The run's staging files, removed (a module not imported yet has none): what was finished stays."""
    files = sys.modules.get("rescorer.files")
    if files is not None and hasattr(files, "remove_own_staging"):
        files.remove_own_staging()


def output_closed() -> NoReturn:
    """Standard output was closed by its reader (``rescorer … | head -1``): stop quietly at once, as a command in a
    pipe does (status 141, 128 + SIGPIPE), keeping what was finished; a rerun goes on from there."""
    remove_own_staging()
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush into the closed pipe
    os._exit(141)


def interrupted(cfg=None, status: int = 130) -> None:
    """One line, then exit ``status`` at once: an interrupt can land inside a half-done import whose exit hooks would
    print or re-raise the signal, and everything that was finished is already in the store. The run's staging files
    go first."""
    remove_own_staging()
    store = cfg.get("engine", {}).get("store") if cfg is not None else None
    saved = f"finished scores are in {store}; " if store and os.path.isfile(store) else ""  # opened, so it holds them
    print(f"rescorer: interrupted: {saved}rerun the same command to resume", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(status)


def exit_on_interrupt(cfg=None) -> None:
    """Ctrl-C and SIGTERM call ``interrupted`` themselves rather than raising KeyboardInterrupt, which a library's bare
    ``except:`` or a ``__del__`` running at that moment would swallow, leaving the run going; an ignored signal (SIGINT
    of a background job) stays ignored."""
    for signum, status in SIGNAL_STATUS.items():
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, lambda number, frame, status=status: interrupted(cfg, status))


def run(cfg) -> None:
    """The Hydra task function: one line and exit 2 for what the user can fix; a traceback for our own bugs."""
    exit_on_interrupt(cfg)
    from .log import to_terminal
    from .tasks import run_task, user_error

    to_terminal()
    try:
        run_task(cfg)
        for signum in SIGNAL_STATUS:  # done, outputs in place: a late Ctrl-C or SIGTERM has nothing left to stop
            signal.signal(signum, signal.SIG_IGN)
    except KeyboardInterrupt:
        interrupted(cfg)
    except BrokenPipeError:
        output_closed()
    except Exception as err:
        reason = user_error(err)
        if reason is None:
            raise
        fail(reason)


def fail(reason: str) -> NoReturn:
    """What the user can fix: one line (control characters from the input made visible), exit 2."""
    from .safetext import visible

    print(f"rescorer: error: {visible(reason)}", file=sys.stderr)
    sys.exit(2)


def group_options(dirs: list[Path]) -> dict[str, list[str]]:
    """Each config group of the config directories and its options (the yaml files under the group's folder)."""
    options: dict[str, set[str]] = {}
    for conf in dirs:
        for path in conf.glob("*/**/*.yaml"):
            group, *option = path.relative_to(conf).with_suffix("").parts
            options.setdefault(group, set()).add("/".join(option))
    return {group: sorted(names) for group, names in options.items()}


def usage() -> str:
    """A few lines: what to type, the tasks and every config group's options."""
    from .tasks import CONF, task_names
    from .version import __version__
    options = group_options([CONF])
    rows = {"task=": task_names(), **{("+" if group == "experiment" else "") + f"{group}=": options[group]
                                      for group in GROUPS}}
    width = max(map(len, rows))
    return "\n".join([f"rescorer {__version__}: rescore ASR/MT N-best lists with language models",
                      "usage: rescorer [task=TASK] [data=DATA] [scorer=[pll,ll]] [GROUP=OPTION] [key=value ...]",
                      *(f"  {label:<{width}} {' '.join(names)}" for label, names in rows.items()),
                      "e.g.   rescorer task=rescore data=own data.sets.dev.nbest=DEV data.sets.dev.refs=REFS "
                      "out_dir=exp/tuned      (writes exp/tuned/tuned.yaml)",
                      "       rescorer task=apply task.tuned=exp/tuned/tuned.yaml data=own data.sets.test.nbest=NEW",
                      "       rescorer +experiment=demo",
                      f"more:  rescorer ... --cfg job (the composed config), --hydra-help; configs: {CONF}"])


def check_command_line(args: list[str]) -> None:
    """Refuse a misspelt config group, option or key before Hydra composes, which would print several lines: the
    groups and options are the yaml files of ``conf/`` and of ``--config-dir``, the keys those of the config the
    group choices compose and, for a ``+key``, those its reader takes. Hydra's own refusals become one line."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ValueType

    from .errors import ConfigError, check_known
    from .tasks import CONF

    parsed = hydra_arguments(args)
    if parsed is None:
        return  # not a command line Hydra takes: its own usage says why
    dirs = [CONF, *([Path(parsed.config_dir).resolve()] if parsed.config_dir else [])]
    for conf in dirs[1:]:
        check_config_files(conf)
    if parsed.config_path or parsed.hydra_help or parsed.info or parsed.shell_completion or parsed.experimental_rerun \
            or not all(conf.is_dir() for conf in dirs):
        return  # another primary config, or not a run: Hydra's to handle
    with one_line_refusals():
        overrides = OverridesParser.create().parse_overrides(parsed.overrides)
        if any(o.key_or_group == "hydra.searchpath" for o in overrides):
            return  # more config directories: Hydra's to search
        groups = group_options(dirs)
        picks = [o for o in overrides if o.key_or_group in groups]
        if any(o.value_type is ValueType.GLOB_CHOICE_SWEEP for o in picks):
            return  # the options a glob picks are Hydra's to find
        for pick in picks:
            check_known(pick.key_or_group, picked_options(pick), groups[pick.key_or_group])
        chosen = [first_choice(o) for o in picks]
    values = [o for o in overrides if o not in picks and not o.is_hydra_override()]
    name = parsed.config_name or "config"
    try:  # where every value merges and none adds a key or sweeps, this one composition has checked every key
        with one_line_refusals():
            composed_config(dirs, name, [*chosen, *(o.input_line for o in values if not o.is_sweep_override())])
        refused = None
    except ConfigError as err:
        refused = err
    if refused or any(o.is_add() or o.is_force_add() or o.is_sweep_override() for o in values):
        with one_line_refusals():  # the config the values are given to, to name a misspelt key and its choices
            cfg = composed_config(dirs, name, chosen)
        for override in values:
            check_key(cfg, override, groups)
    if refused:
        raise refused
    check_run_dir(overrides, parsed.multirun)


class QuietParser(argparse.ArgumentParser):
    """An argument parser that raises on what it cannot parse instead of printing usage and exiting."""

    def error(self, message: str) -> NoReturn:
        raise ValueError(message)


HYDRA_SWITCHES = (("--help", "-h"), ("--hydra-help",), ("--version",), ("--resolve",), ("--run", "-r"),
                  ("--multirun", "-m"), ("--shell-completion", "-sc"))  # Hydra's flags that take no value …
HYDRA_VALUES = (("--package", "-p"), ("--config-path", "-cp"), ("--config-name", "-cn"), ("--config-dir", "-cd"),
                ("--experimental-rerun",))  # … and those that take one (a test holds both to the installed Hydra's)
HYDRA_CHOICES = {("--cfg", "-c"): (None, ["job", "hydra", "all"]),
                 ("--info", "-i"): ("all", ["all", "config", "defaults", "defaults-tree", "plugins", "searchpath"])}


def hydra_parser() -> argparse.ArgumentParser:
    """Hydra's command line as its own parser reads it: its flags and the overrides."""
    parser = QuietParser(add_help=False)
    for flags in HYDRA_SWITCHES:
        parser.add_argument(*flags, action="store_true")
    parser.add_argument("overrides", nargs="*")
    for flags in HYDRA_VALUES:
        parser.add_argument(*flags)
    for flags, (const, choices) in HYDRA_CHOICES.items():
        parser.add_argument(*flags, nargs=None if const is None else "?", const=const, choices=choices)
    return parser


def hydra_arguments(args: list[str]) -> argparse.Namespace | None:
    """``args`` read as Hydra's command line reads them; None if it would refuse them."""
    try:
        return hydra_parser().parse_args(args)
    except ValueError:
        return None


def refuse_aliases(path: Path) -> None:
    """Refuse a config file with YAML aliases (a few lines of nested ones expand to billions of nodes)."""
    import yaml

    from .errors import ConfigError
    from .strictyaml import StrictLoader

    try:
        yaml.compose(path.read_text(encoding="utf-8", errors="replace"), Loader=StrictLoader)  # noqa: S506
    except yaml.YAMLError as err:
        if "aliases" in str(err):
            raise ConfigError(f"{path}: YAML aliases (*name) are not allowed in a config") from None


def check_config_files(conf: Path) -> None:
    """Refuse a config directory holding a yaml that is not a regular file (a pipe would block Hydra forever) or
    that uses YAML aliases."""
    from .errors import ConfigError
    from .files import special_kind

    for path in sorted(conf.rglob("*.yaml")) if conf.is_dir() else []:
        kind = special_kind(path.stat().st_mode) if path.exists() else None
        if kind:
            raise ConfigError(f"--config-dir {conf}: {path} is not a regular file but {kind}, which could wait for a "
                              "writer forever: save it to a file first")
        if path.is_file() and "*" in path.read_text(encoding="utf-8", errors="replace"):
            refuse_aliases(path)


@contextlib.contextmanager
def one_line_refusals() -> Iterator[None]:
    """Hydra's, OmegaConf's and YAML's refusals of the command line or a config file, and a key too long for Hydra to
    look up, as one :class:`ConfigError`."""
    import yaml
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from .errors import ConfigError

    try:
        yield
    except (HydraException, OmegaConfBaseException, yaml.YAMLError) as err:
        cause = f": {str(err.__cause__).splitlines()[0]}" if err.__cause__ is not None and str(err.__cause__) else ""
        raise ConfigError(" ".join(word for word in f"{err}{cause}".split() if word != "^")) from None
    except OSError as err:  # Hydra looks a key up as a file name: one longer than a file name may be
        if err.errno != errno.ENAMETOOLONG:
            raise
        key = Path(err.filename or "").name
        raise ConfigError(f"the key {key[:60]}… is too long ({err.strerror}): shorten it") from None


def check_run_dir(overrides: list[Any], multirun: bool) -> None:
    """Make the directory ``hydra.run.dir`` (``hydra.sweep.dir`` with ``-m``) names, as Hydra is about to, or refuse
    it in one line where it cannot be made (under a file, in /proc, no permission)."""
    from .errors import ConfigError

    key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
    for override in overrides:
        if override.key_or_group != key or override.is_delete() or override.is_sweep_override():
            continue
        value = str(override.value())
        if "${" in value:
            continue  # Hydra resolves it (${now:…}) when it makes the directory
        try:
            Path(value).mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ConfigError(f"{key}={value}: cannot make the directory ({err.strerror or err})") from None


def picked_options(pick: Any) -> list[str]:
    """The options a group override picks: one, a list (``scorer=[pll,ll]``), each of a sweep's; none to delete."""
    if pick.is_delete():
        return []
    values = list(pick.sweep_iterator()) if pick.is_sweep_override() else [pick.value()]
    names = [name for value in values for name in (value if isinstance(value, list) else [value])]
    return [name for name in names if isinstance(name, str)]


def first_choice(pick: Any) -> str:
    """A group override as its first job would have it (the first choice of a sweep)."""
    if not pick.is_sweep_override():
        return pick.input_line
    return f"{pick.get_key_element()}={next(pick.sweep_string_iterator())}"


def composed_config(dirs: list[Path], name: str, overrides: list[str]) -> dict[str, Any]:
    """The config ``name`` composes with these group overrides, interpolations left as written."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    quoted = ",".join("'" + f"file://{conf}".replace("\\", "\\\\").replace("'", "\\'") + "'" for conf in dirs[1:])
    with initialize_config_dir(config_dir=str(dirs[0]), version_base="1.3"):
        cfg = compose(config_name=name, overrides=[*overrides, *([f"hydra.searchpath=[{quoted}]"] if quoted else [])])
    return OmegaConf.to_container(cfg, resolve=False)


def check_key(cfg: dict[str, Any], override: Any, groups: dict[str, list[str]]) -> None:
    """Refuse an override of a key the config lacks: one no reader takes (suggesting the closest valid key), one
    that needs ``+`` to be added, or one to delete."""
    from .errors import ConfigError, UnknownNameError
    from .tasks import readable_keys

    path = override.key_or_group.split(".")
    node: Any = cfg
    for depth, name in enumerate(path):
        if not isinstance(node, dict):
            return  # under a value or a null: Hydra says what it makes of it
        if name not in node:
            where = tuple(path[:depth])
            readable = readable_keys(where, node)
            if not where:
                readable |= set(groups)  # `+experiment=NAME`: a group not in the defaults
            if override.is_delete() or (readable is not None and name not in readable):
                what = f"{'.'.join(where)} key" if where else "key"
                if where == ("task",) and isinstance(node.get("name"), str):
                    what = f"task={node['name']} key"  # the keys of another task are not this one's
                nested = [f"{group}.{name}" for group, sub in node.items() if isinstance(sub, dict) and name in sub]
                if not where and nested and not override.is_delete():  # `tuned=PATH` for `task.tuned=PATH`
                    value = override.input_line.partition("=")[2]
                    raise ConfigError(f"unknown key {name!r}: did you mean {' or '.join(nested)}? "
                                      f"({nested[0]}={value})")
                raise UnknownNameError(what, name, sorted(node if readable is None else readable))
            if not (override.is_add() or override.is_force_add()):
                key = ".".join(path[:depth + 1])
                raise ConfigError(f"{key} is not in the config: add it with +{override.input_line}")
            return
        node = node[name]


LOADED = ("task", "+experiment", "experiment", "data", "scorer")  # the choices the loading line names


def say_loading(args: list[str]) -> None:
    """On a terminal, one line at once saying what a run loads — the config, torch and the models take seconds before
    the task's first line — through the logger as the command line shows it; nothing for ``--cfg`` and the like."""
    parsed = hydra_arguments(args)
    if parsed is None or parsed.cfg or parsed.info or parsed.hydra_help or parsed.shell_completion \
            or not sys.stdout.isatty():
        return
    from .log import info, to_terminal

    to_terminal()
    picked = [arg for arg in parsed.overrides if arg.partition("=")[0] in LOADED]
    info(f"rescorer: loading {' '.join(picked) or 'task=evaluate'}…")


def main() -> None:
    exit_on_interrupt()
    try:
        args = sys.argv[1:]
        if "--version" in args:
            from .version import __version__
            print(f"rescorer {__version__}")
            return
        if "--help" in args or "-h" in args:
            print(usage())
            return
        say_loading(args)
        import hydra

        from .errors import RescorerError
        from .tasks import CONF, register_resolvers
        try:
            check_command_line(args)
        except RescorerError as err:
            fail(str(err))
        register_resolvers()
        hydra.main(version_base="1.3", config_path=str(CONF), config_name="config")(run)()
    except KeyboardInterrupt:
        interrupted()


if __name__ == "__main__":
    main()
