"""What a run writes: each set in its own format and as canonical JSONL, the 1-best text, the report."""
from __future__ import annotations

from pathlib import Path

from ..io import write_nbest
from ..io.common import write_text
from ..types import NBest

DIRECTORY_FORMATS = ("espnet2", "kaldi")


def write_scored(nbest: NBest, out_dir: Path, name: str) -> dict[str, str]:
    """The set in its own format (``out_dir/name/``) and as canonical JSONL (``out_dir/name.jsonl``)."""
    source = Path(nbest.source)
    native = out_dir / name / ("nbest" if nbest.fmt in DIRECTORY_FORMATS else source.name or f"nbest.{nbest.fmt}")
    write_nbest(nbest, native)
    write_nbest(nbest, out_dir / f"{name}.jsonl", "jsonl")
    return {"native": str(native), "jsonl": str(out_dir / f"{name}.jsonl")}


def write_1best(nbest: NBest, path: Path, with_ids: bool) -> None:
    """The 1-best text: ``id text`` lines (Kaldi ``text``) for ASR, plain lines in order for MT."""
    lines = [(f"{u.id} " if with_ids else "") + text for u, text in zip(nbest, nbest.select([0] * len(nbest)))]
    write_text(path, "".join(f"{line}\n" for line in lines))
