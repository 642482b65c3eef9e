"""Shippable forms of trained models: only what training changed, small enough for the repository (each
written to a temporary directory that replaces the target only when complete).

- ``export_delta``: an adapted masked LM as fp16 shards of every weight except the frozen word embeddings,
  which the pip-installed encoder already has (``rescorer.shipped.minilm_mlm`` rebuilds it).
- ``export_student``: a student as its difference to the masked LM it started from: the rows of each matrix that
  training changed (word embeddings of unseen tokens stay as they were), each in int8 with its own fp16 scale
  (the difference is small, so this is about as exact as fp16 weights at under half their size); vectors as
  fp16 differences; its new head in fp16 (``rescorer.shipped.student`` rebuilds it).
"""
from __future__ import annotations

from pathlib import Path

from ..files import atomic_dir
from ..shipped import STUDENT_FILE, changed_rows, encoder_weights


def export_delta(model_dir: str | Path, out_dir: str | Path, shard_mb: int = 12) -> Path:
    """Write the adapted masked LM of ``model_dir`` to ``out_dir`` as fp16 shards without the word embeddings."""
    import torch
    from huggingface_hub import save_torch_state_dict
    from transformers import AutoModelForMaskedLM

    model = AutoModelForMaskedLM.from_pretrained(model_dir)
    tied = {n for n, p in model.named_parameters(remove_duplicate=False)
            if p is model.get_input_embeddings().weight}
    state = {k: v.to(torch.float16).contiguous() for k, v in model.state_dict().items()
             if k not in tied and not k.endswith(".decoder.weight")}
    with atomic_dir(out_dir) as out:
        save_torch_state_dict(state, out, filename_pattern="delta{suffix}.safetensors",
                              max_shard_size=f"{shard_mb}MB")
        model.config.save_pretrained(out)
    return Path(out_dir)


def quantise_rows(delta):
    """Symmetric int8 per row of a matrix, with fp16 scales (``rescorer.shipped.changed_rows`` undoes it)."""
    import torch

    scale = (delta.abs().amax(dim=1, keepdim=True) / 127).clamp_min(1e-12).to(torch.float16)
    return torch.round(delta / scale.float()).clamp(-127, 127).to(torch.int8), scale


def export_student(student_dir: str | Path, base_dir: str | Path, out_dir: str | Path) -> dict[str, float]:
    """Write the student of ``student_dir`` to ``out_dir`` as its difference to the masked LM ``base_dir``
    (whose encoder it was trained from); returns the round trip's largest weight error and the file's size."""
    import torch
    import transformers
    from safetensors.torch import save_file
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(student_dir)
    student = getattr(transformers, config.architectures[0]).from_pretrained(student_dir).state_dict()
    base = encoder_weights(base_dir)
    tensors, error = {}, 0.0
    for name, weight in student.items():
        if name not in base:
            tensors[f"{name}.head"] = weight.to(torch.float16).contiguous()
            restored = tensors[f"{name}.head"].float()
        elif torch.equal(weight.float(), base[name]):
            restored = base[name]
        elif weight.ndim >= 2:
            diff = (weight.float() - base[name]).reshape(-1, weight.shape[-1])
            rows = torch.nonzero(diff.abs().amax(dim=1) > 0).flatten().to(torch.int32)
            q, scale = quantise_rows(diff[rows.long()])
            tensors.update({f"{name}.rows": rows, f"{name}.q": q.contiguous(), f"{name}.scale": scale.contiguous()})
            restored = changed_rows(base[name], rows, q, scale)
        else:
            tensors[f"{name}.diff"] = (weight.float() - base[name]).to(torch.float16).contiguous()
            restored = base[name] + tensors[f"{name}.diff"].float()
        error = max(error, float((restored - weight.float()).abs().max()))
    with atomic_dir(out_dir) as out:
        save_file(tensors, out / STUDENT_FILE)
        config.save_pretrained(out)
    return {"max_weight_error": error, "bytes": (Path(out_dir) / STUDENT_FILE).stat().st_size}
