"""The random models that tests and benchmarks build are the same models on every run: their numbers, and the
thresholds tests set on them, cannot change from one run to the next."""
from __future__ import annotations

import hashlib

import pytest

from rescorer.devtools import build_model, train_tokenizer

from .models import demo_texts


@pytest.mark.parametrize("kind", ["wordpiece", "roberta-bpe", "gpt2-bpe"])
def test_a_tokenizer_trained_twice_on_the_same_texts_numbers_its_tokens_the_same(kind):
    texts = demo_texts()
    vocabularies = [train_tokenizer(kind, texts, 800).get_vocab() for _ in range(4)]
    assert len(vocabularies[0]) == 800
    assert all(v == vocabularies[0] for v in vocabularies[1:])


def test_a_model_built_twice_with_the_same_seed_is_the_same_file(tmp_path):
    digests = [hashlib.sha256(p.read_bytes()).hexdigest()
               for k in range(2)
               for p in sorted(build_model("bert", "tiny", demo_texts(), tmp_path / str(k), vocab_size=800).iterdir())]
    assert digests[:len(digests) // 2] == digests[len(digests) // 2:]
