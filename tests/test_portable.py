"""A tuned rescorer travels: models are named by what they are (shipped name, path beside the tuned file, content
hash), found again on another machine or under another user, checked by their content, and bundled with it."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import rescorer
from rescorer.errors import ConfigError
from rescorer.pipeline.bundle import bundle
from rescorer.pipeline.portable import located_model, portable_model

from .conftest import DEMO

EXCERPT = {"every": 15, "top": 5}


def demo_set(name: str, **options) -> dict:
    return {"nbest": str(DEMO / name), "refs": str(DEMO / name / "ref.trn"), **EXCERPT, **options}


@pytest.fixture
def tuned_here(tmp_path, tiny_causal):
    """A rescorer tuned on a model in ``a/gpt2`` with the store ``a/store.sqlite``, written to ``a/out``."""
    model = shutil.copytree(tiny_causal, tmp_path / "a" / "gpt2")
    store = tmp_path / "a" / "store.sqlite"
    result = rescorer.rescore(dev=demo_set("dev_other"), sets={"test_clean": demo_set("test_clean")},
                              scorers={"ll": {"kind": "ll", "model": str(model)}},
                              engine={"store": str(store), "progress": False}, bootstrap=50,
                              out_dir=tmp_path / "a" / "out")
    return result, model, store, tmp_path / "a" / "out" / "tuned.yaml"


def counting_forward(monkeypatch) -> list:
    """Count the causal LM's forward calls (every text scored, not read from a store)."""
    from rescorer.scorers.causal import CausalLMScorer

    calls, forward = [], CausalLMScorer.forward
    monkeypatch.setattr(CausalLMScorer, "forward", lambda self, *args: calls.append(1) or forward(self, *args))
    return calls


def test_a_copied_tuned_file_and_model_apply_elsewhere_with_the_same_store(tuned_here, tmp_path, monkeypatch):
    result, model, store, tuned = tuned_here
    assert "ll|model:" + rescorer.load_scorer("ll", str(model), progress=False).signature.split("model:")[1].split(
        "|")[0] in tuned.read_text() and str(model) not in result.tuned.scorers["ll"]["signature"]
    elsewhere = tmp_path / "b"
    shutil.copytree(model, elsewhere / "models" / "gpt2")
    shutil.copy(tuned, elsewhere / "tuned.yaml")
    shutil.move(str(model), tmp_path / "gone")  # the tuning machine's path no longer exists
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RESCORER_CACHE", str(tmp_path / "cache"))
    with pytest.raises(ConfigError, match="is not on this machine: point at it with task.models=DIR"):
        rescorer.apply({"test_clean": demo_set("test_clean")}, elsewhere / "tuned.yaml")
    calls = counting_forward(monkeypatch)
    applied = rescorer.apply({"test_clean": demo_set("test_clean")}, elsewhere / "tuned.yaml",
                             models=elsewhere / "models", engine={"store": str(store), "progress": False},
                             bootstrap=50)
    assert applied.nbests["test_clean"] == result.nbests["test_clean"]
    assert calls == []  # the store keys on the model's content: every score was found


def test_a_moved_model_with_other_content_is_refused_by_its_hash(tuned_here, tmp_path):
    _, model, _, tuned = tuned_here
    changed = shutil.copytree(model, tmp_path / "changed")
    config = changed / "config.json"
    config.write_text(config.read_text() + " ")
    with pytest.raises(ConfigError, match="changed: fingerprint"):
        rescorer.apply({"test_clean": demo_set("test_clean")}, tuned, models={"ll": str(changed)})
    command = [sys.executable, "-m", "rescorer.cli", "task=apply", f"task.tuned={tuned}", f"+task.models.ll={changed}",
               "data=own", f"data.sets.test.nbest={DEMO / 'test_clean'}", f"out_dir={tmp_path / 'new'}"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env={**os.environ, "CI": "1"})
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "fingerprint" in done.stderr, done.stderr
    assert not (tmp_path / "new").exists()


def test_a_bundle_applies_from_anywhere_without_its_source(tuned_here, tmp_path):
    result, model, _, tuned = tuned_here
    report = bundle(tuned, tmp_path / "bundle")
    assert report["models"]["ll"]["to"] == "./models/ll" and report["models"]["ll"]["files"] > 0
    assert "model: ./models/ll" in (tmp_path / "bundle" / "tuned.yaml").read_text()
    moved = shutil.move(str(tmp_path / "bundle"), tmp_path / "far" / "away")
    shutil.rmtree(model)
    shutil.rmtree(tmp_path / "a" / "out")
    applied = rescorer.apply({"test_clean": demo_set("test_clean")}, Path(moved) / "tuned.yaml", bootstrap=50)
    assert applied.nbests["test_clean"] == result.nbests["test_clean"]


def test_models_are_named_by_what_they_are(tmp_path, monkeypatch):
    monkeypatch.setenv("RESCORER_CACHE", str(tmp_path / "cache"))
    shipped = tmp_path / "cache" / "student-mse-0123-on-minilm-mlm-4567"
    shipped.mkdir(parents=True)
    beside = tmp_path / "run" / "models" / "lm"
    beside.mkdir(parents=True)
    assert portable_model(str(shipped), tmp_path / "run") == "shipped:student_mse"
    assert portable_model(str(beside), tmp_path / "run") == "./models/lm"
    assert portable_model(str(tmp_path / "cache"), tmp_path / "run") == str((tmp_path / "cache").resolve())
    assert portable_model("gpt2", tmp_path / "run") == "gpt2"  # a hub name stays one
    assert located_model("./models/lm", "ll", tmp_path / "run" / "tuned.yaml", None) == str(
        tmp_path / "run" / "models" / "lm")
    with pytest.raises(ConfigError, match="is no shipped model .*shipped:student_mse"):
        located_model("shipped:nosuch", "ll", None, None)


def test_lists_of_another_depth_are_applied_with_a_warning(tuned_here):
    result, _, _, tuned = tuned_here
    assert result.tuned.lists == {"utterances": 20, "hypotheses": 100, "depth": 5}
    applied = rescorer.apply({"test_clean": demo_set("test_clean", top=3)}, tuned, bootstrap=50)
    assert applied.report.warnings == [
        "set test_clean: 3-best lists, but the weights were tuned on 5-best lists (dev): weights may not carry over "
        "to another depth (cut the lists with top=5, or re-tune on lists like these)"]
