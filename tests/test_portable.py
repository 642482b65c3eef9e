"""A tuned rescorer travels: models are named by what they are (shipped name, path beside the tuned file, content
hash), found again on another machine or under another user, checked by their content, and bundled with it."""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import rescorer
from rescorer.errors import ConfigError
from rescorer.tuned.bundle import bundle
from rescorer.tuned.portable import located_model, portable_model

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


def rewritten_in_place(weights: Path) -> bytes:
    """Scale every weight in the safetensors file ``weights`` by 1.25: other bytes of the same size, its old mtime
    put back (``os.utime``), after a clock tick (file times are kept at the kernel's tick). The original bytes."""
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    original, info = weights.read_bytes(), weights.stat()
    with safe_open(weights, "pt") as handle:
        metadata = handle.metadata()
    scaled = {k: v * 1.25 if v.is_floating_point() else v.clone() for k, v in load_file(weights).items()}
    time.sleep(0.05)
    save_file(scaled, weights, metadata=metadata)
    os.utime(weights, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert weights.stat().st_size == info.st_size and weights.stat().st_mtime_ns == info.st_mtime_ns
    assert weights.read_bytes() != original
    return original


def blind_hash_cache(files: list[Path]) -> None:
    """Make the file hash cache take ``files`` as they are now for the files it hashed before: a cache that missed
    a change (a file system without change times, a cache edited by hand)."""
    from rescorer import filehash

    cache = filehash.cache_dir() / filehash.CACHE_NAME
    entries = json.loads(cache.read_text())
    for file in files:
        entries[str(file.resolve())]["stamp"] = filehash.stamp(file.resolve())
    cache.write_text(json.dumps(entries))


def lm_scores(nbest) -> list[float]:
    return [h.scores["ll"] for u in nbest.utterances for h in u.hyps]


@pytest.fixture
def own_hash_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RESCORER_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("blind", [False, True], ids=["hash-cache-sees-it", "hash-cache-blind-to-it"])
def test_a_model_rewritten_in_place_is_refused_and_never_scores_under_its_old_fingerprint(
        own_hash_cache, tuned_here, tmp_path, monkeypatch, caplog, blind):
    """Weights rewritten with their old size and mtime: the tuned file refuses them (before loading where the hash
    cache sees the change, after loading where it does not); accepted, they score under the fingerprint of the bytes
    loaded, said in one warning line, and the rows of the genuine model stay its own."""
    from rescorer.scorers.loading import fingerprint, model_files
    from rescorer.store import ScoreStore

    result, model, store, tuned = tuned_here
    test, engine = {"test_clean": demo_set("test_clean")}, {"store": str(store), "progress": False}
    genuine = result.tuned.scorers["ll"]["signature"]
    fresh = rescorer.apply(test, tuned, engine={"progress": False}, bootstrap=50)  # no store: computed now
    original = rewritten_in_place(model / "model.safetensors")
    if blind:
        blind_hash_cache(model_files(str(model)))
    files = model_files(str(model))
    was = genuine.split("|")[1].removeprefix("model:")
    now = fingerprint(files, [hashlib.blake2b(f.read_bytes()).hexdigest() for f in files])
    assert now != was
    with pytest.raises(ConfigError, match=f"not the one these weights were tuned with .*{was} → {now}"):
        rescorer.apply(test, tuned, engine=engine, bootstrap=50)
    with caplog.at_level(logging.WARNING, logger="rescorer"):
        accepted = rescorer.apply(test, tuned, engine=engine, bootstrap=50, accept_changed_models=True)
    said = [r.getMessage() for r in caplog.records if r.name == "rescorer" and r.levelno >= logging.WARNING]
    assert len(said) == 1 and "scorer ll" in said[0] and f"{was} → {now}" in said[0], said
    assert "accept_changed_models" in said[0] and "\n" not in said[0]
    unstored = rescorer.apply(test, tuned, engine={"progress": False}, bootstrap=50, accept_changed_models=True)
    assert lm_scores(accepted.nbests["test_clean"]) == lm_scores(unstored.nbests["test_clean"])
    assert lm_scores(accepted.nbests["test_clean"]) != lm_scores(fresh.nbests["test_clean"])
    with ScoreStore(store) as rows:
        assert sorted(rows.signatures()) == sorted([genuine, genuine.replace(f"model:{was}", f"model:{now}")])
    (model / "model.safetensors").write_bytes(original)
    calls = counting_forward(monkeypatch)
    again = rescorer.apply(test, tuned, engine=engine, bootstrap=50)
    assert calls == []  # every score read from the store, under the genuine fingerprint
    assert lm_scores(again.nbests["test_clean"]) == lm_scores(fresh.nbests["test_clean"])


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
