"""The single ``rescorer`` command: a Hydra app dispatching to ``rescorer.tasks.<task>.run``."""
from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from .tasks import CONF, register_resolvers, run_task, user_error


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


def main() -> None:
    register_resolvers()
    _hydra_main()


if __name__ == "__main__":
    main()
