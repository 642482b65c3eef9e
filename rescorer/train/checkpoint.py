"""Resumable training checkpoints: a Hugging Face model directory plus ``state.json`` (and the optimiser)."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Mapping

from ..files import record_text, record_value, write_text


def save_checkpoint(out_dir: str | Path, name: str, model: Any, tokenizer: Any, state: Mapping[str, Any],
                    optimizer: Mapping[str, Any] | None = None) -> Path:
    """Write ``out_dir/name`` (model, tokenizer, ``state.json``, ``optimizer.pt`` if given) atomically."""
    import torch

    out = Path(out_dir)
    target, tmp = out / name, out / f".{name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    if optimizer is not None:
        torch.save(dict(optimizer), tmp / "optimizer.pt")
    write_text(tmp / "state.json", record_text(state, indent=1) + "\n")
    if target.exists():
        shutil.rmtree(target)
    tmp.rename(target)
    return target


def load_checkpoint(out_dir: str | Path, name: str = "last", device: str = "cpu") -> tuple[dict, dict] | None:
    """``(state, optimizer states)`` of ``out_dir/name``, or None when there is nothing to resume."""
    import torch

    path = Path(out_dir) / name
    if not (path / "state.json").exists():
        return None
    optimizer = path / "optimizer.pt"
    saved = torch.load(optimizer, weights_only=True, map_location=device) if optimizer.exists() else {}
    return record_value((path / "state.json").read_text()), saved
