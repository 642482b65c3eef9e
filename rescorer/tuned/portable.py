"""Models named by what they are, so that a tuned rescorer travels to another machine or user: a shipped model by
its name (``shipped:NAME``, built again from the package where it is missing), a model beside the tuned file by
its path relative to it (``./models/…``), any other as given; every local model is checked by its content hash,
which is also what signatures and so the score store key on."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Union

from ..errors import ConfigError
from ..io.common import present
from ..shipped import SHIPPED, shipped_model, shipped_name

SHIPPED_PREFIX = "shipped:"
Models = Union[str, Path, Mapping[str, str], None]  # where moved models are: a directory, or {column or name: path}


def portable_model(model: str, folder: Path) -> str:
    """``model`` as a tuned file in ``folder`` names it: ``shipped:NAME``, ``./PATH`` below ``folder``, else as
    given (an absolute path, a hub name)."""
    if model.startswith((SHIPPED_PREFIX, "./", "../")):
        return model  # named so already
    name = shipped_name(model)
    if name is not None:
        return SHIPPED_PREFIX + name
    path = Path(model).expanduser()
    if not path.exists():
        return model  # a hub name
    resolved, base = path.resolve(), folder.resolve()
    if base in resolved.parents:
        return "./" + resolved.relative_to(base).as_posix()
    return str(resolved)


def located_model(model: str, column: str, source: Path | None, models: Models) -> str:
    """Where ``model`` (as a tuned file at ``source`` names it) is on this machine: a shipped model built or found
    in the cache; where ``models`` says it is; ``./PATH`` beside the tuned file or the path as given; a local model
    that is nowhere is one line saying how to point at it."""
    if model.startswith(SHIPPED_PREFIX):
        name = model[len(SHIPPED_PREFIX):]
        if name not in SHIPPED:
            raise ConfigError(f"{source or 'tuned'}: scorers.{column}.spec.model={model!r} is no shipped model "
                              f"(choose from {', '.join(SHIPPED_PREFIX + n for n in SHIPPED)})")
        return shipped_model(name)
    relative = model.startswith(("./", "../"))
    path = (source.parent / model) if relative and source is not None else Path(model).expanduser()
    moved = moved_model(path.name, column, models)  # where the user says it is now comes first
    if moved is not None and present(moved):
        return moved
    if present(path) or not (relative or path.is_absolute()):
        return str(path) if relative else model  # here, or a hub name
    raise ConfigError(f"{source or 'tuned'}: scorer {column}'s model {model} is not on this machine: point at it "
                      f"with task.models=DIR (a directory holding {path.name}) or task.models={{{column}: PATH}} "
                      "(rescorer.apply(..., models=…)); its content is checked against the tuned one")


def check_moved(models: Models, scorers: Mapping[str, Mapping]) -> None:
    """Refuse ``models`` that cannot say where a tuned file's model is: a directory that is not there, or an entry
    that names no scorer column or model of the file (``scorers``) or a path that is not there."""
    if models is None:
        return
    if not isinstance(models, Mapping):
        path = Path(models).expanduser()
        if not path.is_dir():
            raise ConfigError(f"models={models}: {'not a directory' if present(path) else 'no such directory'} "
                              "(models is a directory holding moved models, or {column or model name: PATH})")
        return
    names = {column: Path(str((entry.get("spec") or {}).get("model") or "")).name for column, entry in scorers.items()}
    for key, path in models.items():
        if key not in names and key not in names.values():
            known = sorted({*names, *filter(None, names.values())})
            raise ConfigError(f"models.{key}: the tuned file has no scorer column or model of that name (it has "
                              f"{', '.join(known) or 'none'})")
        if not present(Path(str(path)).expanduser()):
            raise ConfigError(f"models.{key}={path}: no such file or directory")


def moved_model(name: str, column: str, models: Models) -> str | None:
    """A moved model's path from ``models``: ``DIR/name``, or the entry for the column or for the model's name."""
    if models is None:
        return None
    if isinstance(models, Mapping):
        found = models.get(column, models.get(name))
        return None if found is None else str(Path(str(found)).expanduser())
    candidate = Path(models).expanduser() / name
    return str(candidate) if present(candidate) else None
