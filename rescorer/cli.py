"""The single ``rescorer`` command: a Hydra app dispatching to ``rescorer.tasks.<task>.run``."""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from .errors import RescorerError
from .shipped import package_dir, shipped_model

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "conf"


def register_resolvers() -> None:
    """``${root:}`` is the repository root, ``${pkg:NAME}`` an installed package's directory and
    ``${shipped:NAME}`` a shipped model's directory (built and cached on first use)."""
    if not OmegaConf.has_resolver("root"):
        OmegaConf.register_new_resolver("root", lambda: str(ROOT))
    if not OmegaConf.has_resolver("pkg"):
        OmegaConf.register_new_resolver("pkg", lambda name: str(package_dir(name)))
    if not OmegaConf.has_resolver("shipped"):
        OmegaConf.register_new_resolver("shipped", shipped_model)


def run_task(cfg: DictConfig):
    module = importlib.import_module(f"rescorer.tasks.{cfg.task.name}")
    return module.run(cfg)


@hydra.main(version_base="1.3", config_path=str(CONF), config_name="config")
def _hydra_main(cfg: DictConfig) -> None:
    try:
        run_task(cfg)
    except RescorerError as err:
        print(f"rescorer: error: {err}", file=sys.stderr)
        sys.exit(2)


def main() -> None:
    register_resolvers()
    _hydra_main()


if __name__ == "__main__":
    main()
