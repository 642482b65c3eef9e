"""Domain adaptation: masking follows BERT's recipe, training lowers dev PPPL, and a staged run equals one run."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from rescorer.train.adapt import AdaptConfig, adapt, mask_batch, masked_lm_from_encoder
from rescorer.train.corpus import segments

from .models import demo_texts


def test_masking_follows_the_bert_recipe():
    rng = np.random.default_rng(0)
    ids = rng.integers(10, 1000, size=(400, 50))
    special = np.zeros_like(ids, dtype=bool)
    special[:, 0] = special[:, -1] = True
    special[:5, :] = True  # rows of padding only get nothing masked
    inputs, where, labels = mask_batch(ids, special, mask_id=4, vocab=1000, prob=0.15, rng=rng)
    assert not special[where[:, 0], where[:, 1]].any()
    assert (labels == ids[where[:, 0], where[:, 1]]).all()
    assert abs(len(where) / (~special).sum() - 0.15) < 0.01
    fate = inputs[where[:, 0], where[:, 1]]
    assert abs((fate == 4).mean() - 0.8) < 0.02 and abs((fate == labels).mean() - 0.1) < 0.02
    untouched = np.ones_like(ids, dtype=bool)
    untouched[where[:, 0], where[:, 1]] = False
    assert (inputs[untouched] == ids[untouched]).all()


def test_segments_split_sentences_and_cut_long_ones():
    text = "In the beginning God created the heaven. And the earth was without form!\n\nShort.\n" + "word " * 90
    assert segments(text, max_words=40) == ["In the beginning God created the heaven.",
                                            "And the earth was without form!", *["word " * 39 + "word"] * 2,
                                            "word " * 9 + "word"]  # "Short." is under 3 words: dropped


def test_an_encoder_without_head_gets_one_tied_to_its_embeddings(tiny_models, tmp_path):
    from transformers import AutoModelForMaskedLM

    full = AutoModelForMaskedLM.from_pretrained(tiny_models["bert"])
    full.base_model.save_pretrained(tmp_path / "encoder")  # a BertModel: no MLM head
    (tmp_path / "encoder").joinpath("tokenizer.json").write_text((tiny_models["bert"] / "tokenizer.json").read_text())
    for name in ("tokenizer_config.json",):
        (tmp_path / "encoder" / name).write_text((tiny_models["bert"] / name).read_text())
    _, model = masked_lm_from_encoder(str(tmp_path / "encoder"))
    assert model.cls.predictions.decoder.weight is model.get_input_embeddings().weight
    torch.testing.assert_close(model.bert.encoder.layer[0].attention.self.query.weight,
                               full.bert.encoder.layer[0].attention.self.query.weight)


@pytest.mark.slow
def test_training_lowers_dev_pppl_and_a_staged_run_equals_one_run(tiny_models, tmp_path):
    corpus = tmp_path / "train.txt"
    corpus.write_text("\n\n".join(demo_texts()[200:1400]))
    dev = demo_texts()[:60]
    common = dict(encoder=str(tiny_models["bert"]), train=[str(corpus)], dev_texts=dev, steps=40, eval_every=20,
                  batch_size=16, warmup=5, lr=1e-3, head_lr=3e-3, freeze_embeddings=False, progress=False)
    once = adapt(AdaptConfig(**common, out_dir=str(tmp_path / "once")))
    curve = [c["dev_word_pppl"] for c in once["curve"]]
    assert [c["step"] for c in once["curve"]] == [0, 20, 40]
    assert curve[-1] < 0.7 * curve[0]
    assert once["best_step"] == 40 and (tmp_path / "once" / "best" / "model.safetensors").exists()

    adapt(AdaptConfig(**common, until=20, out_dir=str(tmp_path / "staged")))
    staged = adapt(AdaptConfig(**common, out_dir=str(tmp_path / "staged")))
    assert [c["step"] for c in staged["curve"]] == [0, 20, 40]
    a = load_file(tmp_path / "once" / "last" / "model.safetensors")
    b = load_file(tmp_path / "staged" / "last" / "model.safetensors")
    for name in a:  # the same run up to float summation order (AdamW state, schedule, data and dropout resume)
        torch.testing.assert_close(a[name], b[name], atol=3e-3, rtol=1e-3)
    assert staged["curve"][-1]["dev_word_pppl"] == pytest.approx(once["curve"][-1]["dev_word_pppl"], rel=1e-3)
