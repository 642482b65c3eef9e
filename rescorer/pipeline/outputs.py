"""What a run writes: each set in its own format and as canonical JSONL, the 1-best text, the report —
all into a staging directory that replaces ``out_dir`` only when the whole run succeeded."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator

from ..errors import ConfigError
from ..io import write_nbest
from ..io.common import atomic_dir, id_lines, text_lines, write_text
from ..types import NBest

MARK = "report.json"  # what makes a directory a rescorer run's output (and so replaceable)


@dataclass(frozen=True)
class RunDir:
    """Where a run writes (``work``, a hidden sibling of ``final``) and where its outputs will be."""

    work: Path
    final: Path

    def shown(self, path: Path) -> str:
        """``path`` (under ``work``) as it will be once the run is in place."""
        return str(self.final / Path(path).relative_to(self.work))


@contextlib.contextmanager
def run_dir(out_dir: str | Path) -> Iterator[RunDir]:
    """Stage a run's outputs; they replace ``out_dir`` together when the block succeeds, else vanish. A reused
    ``out_dir`` never mixes runs; one that holds something other than a rescorer run is refused."""
    final = Path(out_dir)
    if final.is_dir() and any(final.iterdir()) and not (final / MARK).is_file():
        raise ConfigError(f"out_dir={final} is not empty and holds no {MARK}: choose a new or empty directory")
    if final.exists() and not final.is_dir():
        raise ConfigError(f"out_dir={final} is a file")
    try:
        with atomic_dir(final) as work:
            yield RunDir(work, final)
    except OSError as err:
        raise ConfigError(f"out_dir={final}: cannot write there ({err.strerror or err})") from None

DIRECTORY_FORMATS = ("espnet2", "kaldi")


def write_scored(nbest: NBest, out_dir: Path, name: str) -> dict[str, Path]:
    """The set in its own format (``out_dir/name/``) and as canonical JSONL (``out_dir/name.jsonl``)."""
    source = Path(nbest.source)
    native = out_dir / name / ("nbest" if nbest.fmt in DIRECTORY_FORMATS else source.name or f"nbest.{nbest.fmt}")
    write_nbest(nbest, native)
    write_nbest(nbest, out_dir / f"{name}.jsonl", "jsonl")
    return {"native": native, "jsonl": out_dir / f"{name}.jsonl"}


def write_1best(nbest: NBest, path: Path, with_ids: bool) -> None:
    """The 1-best text: ``id text`` lines (Kaldi ``text``) for ASR, plain lines in order for MT."""
    best = nbest.select([0] * len(nbest))
    body = id_lines(((u.id, text) for u, text in zip(nbest, best)), path) if with_ids else text_lines(best, path)
    write_text(path, body)


def write_toolkit_1best(nbest: NBest, directory: Path) -> Path | None:
    """The 1-best in the file its toolkit's own scoring reads: ESPnet/Kaldi ``text`` (``id words``), fairseq
    ``generate-1best.txt`` (the best H/D lines per id); None for formats whose 1-best is ``1best.txt`` itself."""
    if nbest.fmt in ("espnet2", "espnet1", "kaldi"):
        path = directory / "text"
        write_1best(nbest, path, with_ids=True)
        return path
    if nbest.fmt == "fairseq":
        path = directory / "generate-1best.txt"
        write_nbest(nbest.with_utterances([replace(u, hyps=u.hyps[:1]) for u in nbest]), path)
        return path
    return None
