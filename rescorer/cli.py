"""The single ``rescorer`` command: a Hydra app dispatching to ``rescorer.tasks.<task>.run``; ``--help`` and
``--version`` are answered before Hydra starts."""
from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from .tasks import CONF, register_resolvers, run_task, task_names, user_error
from .version import __version__

GROUPS = ("data", "scorer", "model", "engine", "search", "pairs", "experiment")


@hydra.main(version_base="1.3", config_path=str(CONF), config_name="config")
def _hydra_main(cfg: DictConfig) -> None:
    try:
        run_task(cfg)
    except KeyboardInterrupt:
        store = cfg.get("engine", {}).get("store")
        saved = f"finished scores are in {store}; " if store else ""
        print(f"rescorer: interrupted: {saved}rerun the same command to resume", file=sys.stderr)
        sys.exit(130)
    except Exception as err:  # one line and exit 2 for what the user can fix; a traceback for our own bugs
        reason = user_error(err)
        if reason is None:
            raise
        print(f"rescorer: error: {reason}", file=sys.stderr)
        sys.exit(2)


def usage() -> str:
    """A few lines: what to type, the tasks and every config group's options."""
    rows = {"task=": task_names(), **{("+" if group == "experiment" else "") + f"{group}=":
                                      sorted(p.stem for p in (CONF / group).glob("*.yaml")) for group in GROUPS}}
    width = max(map(len, rows))
    return "\n".join([f"rescorer {__version__}: rescore ASR/MT N-best lists with language models",
                      "usage: rescorer [task=TASK] [data=DATA] [scorer=[pll,ll]] [GROUP=OPTION] [key=value ...]",
                      *(f"  {label:<{width}} {' '.join(names)}" for label, names in rows.items()),
                      "e.g.   rescorer task=rescore data=demo scorer=[ll]    rescorer +experiment=demo",
                      f"more:  rescorer ... --cfg job (the composed config), --hydra-help; configs: {CONF}"])


def main() -> None:
    args = sys.argv[1:]
    if "--version" in args:
        print(f"rescorer {__version__}")
        return
    if "--help" in args or "-h" in args:
        print(usage())
        return
    register_resolvers()
    _hydra_main()


if __name__ == "__main__":
    main()
