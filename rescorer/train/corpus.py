"""Training text: plain-text files cut into sentence-sized segments, deterministically shuffled and split."""
from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Iterable, Sequence

from ..errors import ConfigError

_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+")


def text_files(paths: Iterable[str | Path]) -> list[Path]:
    """Every ``*.txt`` under the given files or directories, sorted."""
    files: list[Path] = []
    for entry in map(Path, paths):
        if entry.is_dir():
            files += sorted(entry.rglob("*.txt"))
        elif entry.is_file():
            files.append(entry)
        else:
            raise ConfigError(f"training text: no such file or directory: {entry}")
    if not files:
        raise ConfigError(f"training text: no .txt files in {', '.join(map(str, paths))}")
    return files


def segments(text: str, max_words: int = 40, min_words: int = 3) -> list[str]:
    """Sentences of ``text`` (blank lines and sentence punctuation end one), long ones cut at ``max_words``."""
    out = []
    for paragraph in re.split(r"\n\s*\n", text):
        for sentence in _SENTENCE_END.split(" ".join(paragraph.split())):
            words = sentence.split()
            for start in range(0, len(words), max_words):
                piece = words[start : start + max_words]
                if len(piece) >= min_words:
                    out.append(" ".join(piece))
    return out


def load_segments(paths: Sequence[str | Path], max_words: int = 40, seed: int = 0) -> list[str]:
    """All segments of all files, shuffled with ``seed``."""
    texts = [s for f in text_files(paths) for s in segments(f.read_text(encoding="utf-8", errors="replace"), max_words)]
    random.Random(seed).shuffle(texts)
    return texts
