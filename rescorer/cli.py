"""The single ``rescorer`` command: a Hydra app dispatching to ``rescorer.tasks.<task>.run``; ``--help`` and
``--version`` are answered before Hydra starts, and Ctrl-C at any moment is one line and exit 130."""
from __future__ import annotations

import logging
import os
import signal
import sys

GROUPS = ("data", "scorer", "model", "engine", "search", "pairs", "experiment")


def interrupted(cfg=None) -> None:
    """One line, then exit 130 at once: an interrupt can land inside a half-done import whose exit hooks would
    print or re-raise the signal, and everything that was finished is already in the store."""
    store = cfg.get("engine", {}).get("store") if cfg is not None else None
    saved = f"finished scores are in {store}; " if store else ""
    print(f"rescorer: interrupted: {saved}rerun the same command to resume", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(130)


def exit_on_interrupt(cfg=None) -> None:
    """Ctrl-C calls ``interrupted`` itself rather than raising KeyboardInterrupt, which a library's bare ``except:``
    or a ``__del__`` running at that moment would swallow, leaving the run going; an ignored SIGINT (a background
    job) stays ignored."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, lambda signum, frame: interrupted(cfg))


def run(cfg) -> None:
    """The Hydra task function: one line and exit 2 for what the user can fix; a traceback for our own bugs."""
    exit_on_interrupt(cfg)
    from .tasks import run_task, user_error
    try:
        run_task(cfg)
    except KeyboardInterrupt:
        interrupted(cfg)
    except Exception as err:
        reason = user_error(err)
        if reason is None:
            raise
        print(f"rescorer: error: {reason}", file=sys.stderr)
        sys.exit(2)


def usage() -> str:
    """A few lines: what to type, the tasks and every config group's options."""
    from .tasks import CONF, task_names
    from .version import __version__
    rows = {"task=": task_names(), **{("+" if group == "experiment" else "") + f"{group}=":
                                      sorted(p.stem for p in (CONF / group).glob("*.yaml")) for group in GROUPS}}
    width = max(map(len, rows))
    return "\n".join([f"rescorer {__version__}: rescore ASR/MT N-best lists with language models",
                      "usage: rescorer [task=TASK] [data=DATA] [scorer=[pll,ll]] [GROUP=OPTION] [key=value ...]",
                      *(f"  {label:<{width}} {' '.join(names)}" for label, names in rows.items()),
                      "e.g.   rescorer task=rescore data=demo scorer=[ll]    rescorer +experiment=demo",
                      f"more:  rescorer ... --cfg job (the composed config), --hydra-help; configs: {CONF}"])


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
        import hydra

        from .tasks import CONF, register_resolvers
        register_resolvers()
        hydra.main(version_base="1.3", config_path=str(CONF), config_name="config")(run)()
    except KeyboardInterrupt:
        interrupted()


if __name__ == "__main__":
    main()
