"""The N-best files a sharded apply reads (``task.inputs``) and the name of each one's output. Inputs are named,
never guessed: a file is one N-best file (never read to tell), a directory holds shards (or is one decode
directory), a glob matches shards, and only ``@LIST`` reads a file that lists them."""
from __future__ import annotations

import glob
import os
from pathlib import Path
from typing import Sequence

from ..errors import ConfigError, NBestFormatError
from ..files import NAME_LENGTH as FILE_NAME_LENGTH, special_kind
from . import detect_format
from .common import present
from .sets import SET_NAME
from ..options import Option
from ..safetext import visible

KEY = "task.inputs"
LIST = "@"  # @paths.txt: a file listing the shards, one path a line
COMMENT = "#"  # a list file's line starting with it is skipped
SEPARATOR = "-"  # joins the trailing parts of a path into an output name: split1/nbest.jsonl -> split1-nbest.jsonl
NAME_LENGTH = FILE_NAME_LENGTH - len(".json")  # the longest output name: done/NAME.json is written too
TAKES = "an N-best file, a directory, a glob or @LIST"
INPUTS = Option("paths", example=TAKES)


def named_inputs(inputs: str | os.PathLike | Sequence[str | os.PathLike]) -> dict[Path, str]:
    """The N-best files ``inputs`` names, in order, each with its output name (:func:`output_names`): each one
    there, a regular file or a directory, and none of them named twice."""
    paths = input_paths(inputs)
    for path in paths:
        check_readable(path)
    check_distinct(paths)
    return output_names(paths)


def input_paths(inputs: str | os.PathLike | Sequence[str | os.PathLike]) -> list[Path]:
    """The paths ``inputs`` names: a path or a list of them, each expanded by :func:`expanded`."""
    return [path for value in given(inputs) for path in expanded(value)]


def given(inputs: str | os.PathLike | Sequence[str | os.PathLike]) -> list[str]:
    """The values of ``inputs`` (a path or a list of them) as written, checked."""
    INPUTS.check(KEY, inputs)
    values = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
    if not values or values == [""]:
        raise ConfigError(f"{KEY} is empty: name {TAKES}")
    return [os.fspath(value) for value in values]


def named_paths(inputs: str | os.PathLike | Sequence[str | os.PathLike]) -> list[Path]:
    """The paths ``inputs`` names as written — a directory of shards, a list file, a glob — besides the shards they
    expand to: what an out_dir must stay apart from (or out of a glob's reach), or the next run would read it as a
    shard."""
    return [Path(value[len(LIST):] if value.startswith(LIST) else value) for value in given(inputs)
            if value.strip(LIST)]


def expanded(text: str) -> list[Path]:
    """The shards one value of ``task.inputs`` names: ``@LIST`` the paths its file lists (:func:`listed`); a glob
    its matches, in name order; a directory its entries not starting with ``.``, in name order (a decode directory
    that is itself one N-best list is one shard); any other path itself, an N-best file of any size."""
    if not text:
        raise ConfigError(f"{KEY} holds an empty path: name {TAKES}")
    if text.startswith(LIST):
        if text == LIST:
            raise ConfigError(f"{KEY}={LIST}: name the list file after {LIST} ({LIST}paths.txt)")
        return listed(Path(text[len(LIST):]))
    if glob.has_magic(text):
        found = sorted(Path(p) for p in glob.glob(text))
        if not found:
            raise ConfigError(f"{KEY}={visible(text)}: the pattern matches no file")
        return found
    path = Path(text)
    if not path.is_dir():
        return [path]
    try:
        detect_format(path)
        return [path]
    except NBestFormatError:
        found = sorted(p for p in path.iterdir() if not p.name.startswith("."))
        if not found:
            raise ConfigError(f"{KEY}={visible(path)}: the directory holds no N-best file") from None
        return found


def listed(path: Path) -> list[Path]:
    """The paths a list file names: one a line, relative to the list's folder; blank lines and lines starting with
    ``#`` are skipped. A path that is not there is an error naming the list file and the line."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as err:
        raise ConfigError(f"{KEY}={LIST}{visible(path)}: cannot read the list file ({err.strerror or err})") from None
    except UnicodeDecodeError as err:
        raise ConfigError(f"{KEY}={LIST}{visible(path)}: the list file is not UTF-8 text ({err.reason} at byte "
                          f"{err.start})") from None
    found = []
    for number, line in enumerate(text.split("\n"), 1):
        line = line.strip()
        if not line or line.startswith(COMMENT):
            continue
        entry = path.parent / line
        if not present(entry):
            raise ConfigError(f"{visible(path)}:{number}: no such file or directory: {visible(entry)} (a list file "
                              "names one path a line, relative to its folder)")
        found.append(entry)
    if not found:
        raise ConfigError(f"{KEY}={LIST}{visible(path)}: the list file names no N-best file")
    return found


def check_readable(path: Path) -> None:
    """Refuse a shard that is not there, or that could be read only once or wait for a writer (a pipe, a device)."""
    if not present(path):
        raise ConfigError(f"{KEY}: no such file or directory: {visible(path)}")
    kind = special_kind(path.stat().st_mode)
    if kind:
        raise ConfigError(f"{KEY}: {visible(path)} is {kind}, which could be read only once or wait for a writer: "
                          "save it to a file first")


def check_distinct(paths: Sequence[Path]) -> None:
    """Refuse two inputs that are the same file (the same real path), naming both."""
    seen: dict[str, Path] = {}
    for path in paths:
        real = os.path.realpath(path)
        if real in seen:
            raise ConfigError(f"{KEY}: {visible(seen[real])} and {visible(path)} are the same file"
                              f"{'' if str(path) == real else f' ({visible(real)})'}: name each shard once")
        seen[real] = path


def output_names(paths: Sequence[Path]) -> dict[Path, str]:
    """Each input's output name, ``out_dir/shards/NAME``: its file name when every input's is its own; else the
    fewest trailing parts of every input's path that tell them all apart, joined by ``-`` (``split1/nbest.jsonl``
    and ``split2/nbest.jsonl``: ``split1-nbest.jsonl`` and ``split2-nbest.jsonl``). A name is letters, digits,
    ``_``, ``-`` and ``.``, not starting with ``.``, of at most :data:`NAME_LENGTH` characters."""
    parts = {path: Path(os.path.abspath(path)).parts[1:] for path in paths}
    longest = max((len(found) for found in parts.values()), default=1)
    count = next((n for n in range(1, longest) if len({SEPARATOR.join(found[-n:]) for found in parts.values()})
                  == len(parts)), longest)
    names: dict[str, Path] = {}
    for path, found in parts.items():
        name = SEPARATOR.join(found[-count:])
        if name in names:  # whole paths that join to one name: a-b/c and a/b-c
            raise ConfigError(f"{KEY}: {visible(names[name])} and {visible(path)} would both be written as "
                              f"out_dir/shards/{visible(name)}: rename one")
        names[name] = path
    for path, found in parts.items():
        check_name(path, found[-count:])
    return {path: name for name, path in names.items()}


def check_name(path: Path, parts: Sequence[str]) -> None:
    """Refuse an output name (``parts`` joined) that is not a plain file name, naming the part of ``path`` that makes
    it so, or that is too long."""
    name = SEPARATOR.join(parts)
    if not SET_NAME.fullmatch(name):  # it names files and report rows: no markup, no control characters
        bad = next((p for end, p in enumerate(parts, 1) if not SET_NAME.fullmatch(SEPARATOR.join(parts[:end]))),
                   name)
        raise ConfigError(f"{KEY}: {visible(path)} cannot name a shard ('{visible(bad)}' is part of its name): use "
                          "letters, digits, '_', '-' and '.' in shard names, not starting with '.'")
    if len(name) > NAME_LENGTH:
        raise ConfigError(f"{KEY}: {visible(path)} would be written as out_dir/shards/{name[:40]}…, a name of "
                          f"{len(name)} characters (at most {NAME_LENGTH}): shorten its file or folder names")
