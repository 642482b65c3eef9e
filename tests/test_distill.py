"""Maskless student: teacher targets come from the store, training learns, a staged run resumes, and the
student scorer's numbers equal a direct forward pass of the saved model."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from transformers import (
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    AutoTokenizer,
)

from rescorer import load_scorer
from rescorer.errors import ConfigError
from rescorer.store import ScoreStore
from rescorer.train.distill import DistillConfig, distill

from .models import demo_texts, tiny_models  # noqa: F401  (fixture)


@pytest.fixture(scope="module")
def trained(tiny_models, tmp_path_factory):
    """Sentence- and token-level students of a tiny BERT teacher, trained briefly on the demo texts."""
    root = tmp_path_factory.mktemp("distill")
    teacher = dict(kind="pll", model=str(tiny_models["bert"]), variant="original", case="sentence",
                   append_period=True, store=str(root / "store.sqlite"), device="cpu")
    texts = demo_texts()[:240]
    runs = {}
    for level in ("sentence", "token"):
        cfg = DistillConfig(teacher=teacher, texts=texts, out_dir=str(root / level), level=level, epochs=6,
                            batch_size=16, lr=1e-3, eval_every=10, patience=100, dev_fraction=0.2, device="cpu",
                            progress=False)
        runs[level] = (cfg, distill(cfg))
    return teacher, texts, runs


def test_teacher_targets_are_computed_once_through_the_store(trained):
    teacher_options, texts, runs = trained
    teacher = load_scorer(**teacher_options)
    distinct = set(teacher.normalise([t for t in texts if t.strip()]))
    with ScoreStore(teacher_options["store"]) as store:
        assert store.count(teacher.signature) == len(distinct)
    assert teacher.compute(texts).stats.rows_computed == 0
    cfg, result = runs["sentence"]
    assert result["train_texts"] + result["dev_texts"] == len(distinct)


@pytest.mark.parametrize("level", ["sentence", "token"])
def test_training_fits_the_teacher_and_lowers_dev_error(trained, level):
    """A random tiny teacher's sentence means are mostly noise: the sentence student fits its training
    targets but gains little on dev; per-token log-probs are learnable and the dev error falls far."""
    _, _, runs = trained
    curve = runs[level][1]["curve"]
    assert curve[0]["step"] == 0 and curve[-1]["train_mse"] < 0.6 * curve[1]["train_mse"]
    best = min(c["dev_mse"] for c in curve)
    assert best < (0.8 if level == "token" else 1.0) * curve[0]["dev_mse"]


@pytest.mark.parametrize("level", ["sentence", "token"])
def test_student_scorer_equals_a_direct_forward_of_the_saved_model(trained, level):
    teacher_options, texts, runs = trained
    cfg, result = runs[level]
    student = load_scorer("student", result["student"], case="sentence", append_period=True, device="cpu")
    sample = [t for t in texts if t.strip()][:25]
    totals, tokens = student.score(sample), student.token_scores(sample)
    auto = AutoModelForSequenceClassification if level == "sentence" else AutoModelForTokenClassification
    model = auto.from_pretrained(result["student"]).eval()
    tokenizer = AutoTokenizer.from_pretrained(result["student"])
    info = json.loads((Path(result["student"]) / "config.json").read_text())["rescorer_student"]
    teacher = load_scorer(**teacher_options)
    for text, total, per_token in zip(student.normalise(sample), totals, tokens):
        enc = tokenizer(text, return_tensors="pt")
        with torch.no_grad():
            out = model(**enc).logits[0, ..., 0].numpy() * info["std"] + info["mean"]
        n = enc["input_ids"].shape[1] - 2
        expected = out * n if level == "sentence" else out[1:-1].sum()
        assert total == pytest.approx(float(expected), abs=1e-4)
        assert len(per_token) == n == len(teacher.token_scores([text])[0])


def test_a_staged_run_resumes_where_it_stopped(trained, tmp_path):
    teacher_options, texts, _ = trained
    common = dict(teacher=teacher_options, texts=texts, out_dir=str(tmp_path / "staged"), batch_size=16, lr=1e-3,
                  eval_every=5, patience=100, dev_fraction=0.2, device="cpu", progress=False)
    first = distill(DistillConfig(**common, epochs=1))
    steps_per_epoch = first["step"]
    second = distill(DistillConfig(**common, epochs=2))
    assert second["step"] == 2 * steps_per_epoch
    assert [c["dev_mse"] for c in second["curve"][: len(first["curve"])]] == [c["dev_mse"] for c in first["curve"]]
    one_go = distill(DistillConfig(**{**common, "out_dir": str(tmp_path / "one")}, epochs=2))
    assert one_go["curve"][-1]["step"] == second["curve"][-1]["step"]
    assert one_go["curve"][-1]["dev_mse"] == pytest.approx(second["curve"][-1]["dev_mse"], rel=1e-4)


def test_a_student_refuses_a_different_normalisation(trained):
    _, _, runs = trained
    with pytest.raises(ConfigError, match="normalised"):
        load_scorer("student", runs["sentence"][1]["student"], case="keep", append_period=False)
