"""Maskless student: teacher targets come from the store, training learns, a staged run resumes, and the
student scorer's numbers equal a direct forward pass of the saved model."""
from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
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
from rescorer.train.distill import DistillConfig, distill, is_dev

from .models import demo_texts

pytestmark = pytest.mark.slow  # every test trains a student


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


def test_the_held_out_comparison_scores_only_hypotheses_not_trained_on(trained, tmp_path):
    """Student against teacher on a set's hypotheses left out of training: counted by hand, and its Pearson r and
    MAE as the two scorers give them text by text."""
    from rescorer.io.sets import NBestSet
    from rescorer.normalise import Normaliser
    from rescorer.studies.distill import heldout

    from .conftest import DEMO

    teacher, texts, runs = trained
    cfg, result = runs["sentence"]
    found = heldout(teacher, {"device": "cpu"}, Path(result["student"]), {"dev": NBestSet(str(DEMO / "dev_other"))},
                    (texts, []), tmp_path)["dev"]
    normalise = Normaliser("sentence", True)
    trained_on = {normalise(t) for t in texts}
    left = {}  # each distinct normalised hypothesis not trained on, as first written
    for utt in NBestSet(str(DEMO / "dev_other")).read():
        for hyp in utt.hyps:
            if normalise(hyp.text) not in trained_on:
                left.setdefault(normalise(hyp.text), hyp.text)
    assert found["texts"] == len(left) > 100
    raw = list(left.values())  # each scorer normalises them itself here
    x = np.array(load_scorer(**teacher).score(raw))
    y = np.array(load_scorer("student", result["student"], store=None, device="cpu").score(raw))
    assert found["pearson"] == pytest.approx(np.corrcoef(x, y)[0, 1], rel=1e-6)
    assert found["mae"] == pytest.approx(np.abs(x - y).mean(), rel=1e-6)
    assert Path(found["plot"]).is_file()


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


def test_a_causal_lm_teacher_is_distilled_into_an_encoder_by_its_total_per_student_token(tiny_models, tmp_path):
    """A log-likelihood teacher (another tokenizer than the student's): each text's targets are the teacher's total
    spread over the student's own tokens, so they sum to it; they come through the store; training fits them."""
    from transformers import AutoTokenizer

    from rescorer.train.distill import teacher_targets

    teacher = dict(kind="ll", model=str(tiny_models["gpt2"]), case="sentence", append_period=True,
                   store=str(tmp_path / "store.sqlite"), device="cpu")
    cfg = DistillConfig(teacher=teacher, texts=demo_texts()[:120], out_dir=str(tmp_path / "ll"),
                        init=str(tiny_models["bert"]), epochs=8, batch_size=16, lr=1e-3, eval_every=5,
                        patience=100, dev_fraction=0.2, device="cpu", progress=False)
    targets, scorer, init = teacher_targets(cfg)
    assert init == str(tiny_models["bert"]) and scorer.kind == "ll"
    tokenizer = AutoTokenizer.from_pretrained(tiny_models["bert"])
    for text, values in targets.train[:20] + targets.dev[:5]:
        assert len(values) == len(tokenizer(text, add_special_tokens=False)["input_ids"])
        assert values.sum() == pytest.approx(scorer.compute([text], normalise=False).totals[0], rel=1e-6)
    result = distill(cfg)
    assert result["teacher"] == scorer.signature and scorer.compute(cfg.texts).stats.rows_computed == 0
    curve = result["curve"]
    assert curve[-1]["train_mse"] < 0.6 * curve[1]["train_mse"], curve
    info = json.loads((Path(result["student"]) / "config.json").read_text())["rescorer_student"]
    assert info["teacher"].startswith("ll|")


def test_a_teacher_reading_context_is_distilled_from_the_lists_into_a_student_that_reads_it(tiny_models, tmp_path):
    """A causal teacher with one previous utterance of context, on N-best lists: the targets are the hypotheses
    after their contexts, each summing to the teacher's score of it; the student records the context and reads it
    as the teacher did (the previous utterance's 1-best changes its score, a first utterance has none)."""
    from rescorer.context import SEPARATOR, conditional, split
    from rescorer.io.sets import NBestSet
    from rescorer.train.distill import teacher_targets

    from .conftest import DEMO

    lists = [NBestSet(str(DEMO / "dev_other"), top=4).read()]
    teacher = dict(kind="ll", model=str(tiny_models["gpt2"]), case="sentence", append_period=True, device="cpu",
                   store=str(tmp_path / "store.sqlite"), context={"utterances": 1, "tokens": 24})
    cfg = DistillConfig(teacher=teacher, nbests=lists, out_dir=str(tmp_path / "ctx"), init=str(tiny_models["bert"]),
                        epochs=2, batch_size=16, lr=1e-3, eval_every=5, patience=100, dev_fraction=0.2,
                        device="cpu", progress=False)
    targets, scorer, _ = teacher_targets(cfg)
    pairs = targets.train + targets.dev
    assert sum(SEPARATOR in text for text, _ in pairs) > len(pairs) / 2  # most utterances have one before them
    for text, values in pairs[:20]:
        assert values.sum() == pytest.approx(scorer.compute([text], normalise=False).totals[0], rel=1e-6)
    result = distill(cfg)
    run = json.loads((tmp_path / "ctx" / "config.json").read_text())  # the run's options: its lists by their size
    assert run["nbests"] == [{"utterances": len(lists[0]), "hypotheses": lists[0].num_hypotheses}]
    info = json.loads((Path(result["student"]) / "config.json").read_text())["rescorer_student"]
    assert (info["context"]["utterances"], info["context"]["tokens"]) == (1, 24)
    student = load_scorer("student", result["student"], store=None, device="cpu")
    assert "1/24/first_pass" in student.signature
    hypothesis = split(pairs[0][0])[1]
    alone, after_one, after_other = student.compute(
        [hypothesis, conditional("He said so.", hypothesis), conditional("Nothing at all.", hypothesis)],
        normalise=False).totals
    assert after_one != pytest.approx(after_other, abs=1e-6) and alone != pytest.approx(after_one, abs=1e-6)


def test_the_within_list_loss_compares_each_total_about_its_lists_mean_with_the_teachers(tiny_models, tmp_path):
    """With ``list_weight`` the dev split keeps every N-best list on one side, a batch is one whole list, and the
    within-list error equals a hand loop over the list: (student total − its list mean) − (teacher total − its
    list mean), squared, over the teacher's mean square spread within the training lists; the student's totals
    are what its scorer says. Without lists to train on it is refused."""
    from rescorer.io.sets import NBestSet
    from rescorer.train.batches import list_batches
    from rescorer.train.distill import Distillation, dev_scorer

    from .conftest import DEMO

    lists = [NBestSet(str(DEMO / "dev_other"), top=4).read()]
    teacher = dict(kind="ll", model=str(tiny_models["gpt2"]), case="sentence", append_period=True, device="cpu",
                   store=str(tmp_path / "store.sqlite"))
    cfg = DistillConfig(teacher=teacher, nbests=lists, texts=demo_texts()[:20], out_dir=str(tmp_path / "list"),
                        init=str(tiny_models["bert"]), epochs=1, batch_size=8, eval_every=10, dev_fraction=0.2,
                        list_weight=1.0, device="cpu", progress=False)
    objective = Distillation(cfg)
    targets = objective.targets
    side = {}
    for part, pairs in (("train", targets.train), ("dev", targets.dev)):
        for text, _ in pairs:
            if text in targets.lists:
                assert side.setdefault(targets.lists[text], part) == part  # no list on both sides
    assert set(side.values()) == {"train", "dev"}
    deviations = []
    for key in dict.fromkeys(targets.lists[t] for t, _ in targets.train if t in targets.lists):
        totals = [v.sum() for t, v in targets.train if targets.lists.get(t) == key]
        if len(totals) > 1:
            deviations += [x - sum(totals) / len(totals) for x in totals]
    assert objective.spread == pytest.approx(sum(d * d for d in deviations) / len(deviations), rel=1e-9)
    objective.setup(None)
    batches = (list_batches(s, objective.listed, objective.loose, 8, 0) for s in range(objective.steps_per_epoch))
    picked = next(b for b in batches if len(b) > 1 and targets.train[b[0]][0] in targets.lists)
    batch = [targets.train[i] for i in picked]
    assert len({targets.lists[t] for t, _ in batch}) == 1  # one whole list
    with torch.inference_mode():
        totals = objective.totals(*objective.predict([t for t, _ in batch]))
        error, members = objective.list_errors(batch, totals)
    scored = dev_scorer(cfg, objective.tokenizer, objective.model, "cpu").score([t for t, _ in batch])
    assert totals.tolist() == pytest.approx(scored, rel=1e-4)
    student, teacher_totals = np.array(scored), np.array([v.sum() for _, v in batch])
    by_hand = sum(((s - student.mean()) - (t - teacher_totals.mean())) ** 2
                  for s, t in zip(student, teacher_totals)) / objective.spread
    assert (float(error), members) == (pytest.approx(by_hand, rel=1e-3), len(batch))
    result = distill(cfg)
    last = result["curve"][-1]
    assert last["dev_loss"] == pytest.approx(last["dev_mse"] + last["dev_list_mse"])
    with pytest.raises(ConfigError, match=re.escape("task.list_weight=1.0: the within-list loss needs N-best lists")):
        Distillation(replace(cfg, nbests=[]))
    assert np.isfinite([last["train_list_mse"], last["dev_list_pearson"]]).all()


def test_a_teacher_the_student_cannot_follow_is_one_line(tiny_models, tmp_path):
    """A causal teacher with no encoder to start from, a token-level student on another tokenizer and a teacher
    that reads context are each refused, naming what to change."""
    from rescorer.train.distill import teacher_targets

    ll = dict(kind="ll", model=str(tiny_models["gpt2"]), store=None, device="cpu")
    common = dict(texts=demo_texts()[:40], out_dir=str(tmp_path / "out"), device="cpu", progress=False)
    with pytest.raises(ConfigError, match=re.escape("task.init: the student of a ll teacher needs an encoder")):
        teacher_targets(DistillConfig(teacher=ll, **common))
    with pytest.raises(ConfigError, match="a token-level student needs the teacher's tokenizer"):
        teacher_targets(DistillConfig(teacher=ll, init=str(tiny_models["bert"]), level="token", **common))
    with pytest.raises(ConfigError, match="reads the utterances before each text"):
        teacher_targets(DistillConfig(teacher={**ll, "context": {"utterances": 2}}, init=str(tiny_models["bert"]), **common))


def test_a_student_normalises_as_it_was_trained_unless_told_otherwise_which_it_refuses(trained):
    _, _, runs = trained
    path = runs["sentence"][1]["student"]
    texts = ["THE CAT SAT", "a dog ran."]
    own = load_scorer("student", path, device="cpu", progress=False)
    assert own.normalise(texts) == ["The cat sat.", "A dog ran."]  # the teacher's case=sentence, append_period
    told = load_scorer("student", path, case="sentence", append_period=True, device="cpu", progress=False)
    assert own.signature == told.signature and own.score(texts) == told.score(texts)
    assert load_scorer("student", path, case="sentence", device="cpu").signature == own.signature
    for different in ({"case": "keep"}, {"append_period": False}, {"case": "keep", "append_period": False}):
        with pytest.raises(ConfigError, match=re.escape("normalised as 'case:sentence|period:yes'")):
            load_scorer("student", path, **different)


def test_mwer_student_trains_on_nbest_word_errors_and_selects_by_held_out_wer(tiny_models, tmp_path):
    """RescoreBERT's objective on real ESPnet lists (demo dev_other): the held-out WER at step 0 equals a hand
    re-ranking of b + a·s with the untrained student; the best checkpoint is the curve's lowest held-out WER and
    loads as a student with its learnt scale; a rerun resumes."""
    from rescorer import read_nbest
    from rescorer.normalise import Normaliser
    from rescorer.train.mwer import MWERConfig, mwer_distill, nbest_lists

    from .conftest import DEMO

    nbest = read_nbest(DEMO / "dev_other", refs=DEMO / "dev_other" / "ref.trn")
    nbest = nbest.with_utterances([replace(u, hyps=u.hyps[:4]) for u in nbest.utterances[:60]])
    lists = nbest_lists([nbest], "score", Normaliser("sentence", True))
    teacher = dict(kind="pll", model=str(tiny_models["bert"]), variant="original", case="sentence",
                   append_period=True, store=str(tmp_path / "store.sqlite"), device="cpu")
    cfg = DistillConfig(teacher=teacher, texts=[], out_dir=str(tmp_path / "mwer"), epochs=2, batch_size=16,
                        lr=1e-3, eval_every=3, patience=100, dev_fraction=0.2, device="cpu", progress=False)
    mwer = MWERConfig(lists, beta=0.1, scale=0.3, lists_per_step=8, held_fraction=0.2)
    result = mwer_distill(cfg, mwer)
    curve = result["curve"]
    assert curve[0]["step"] == 0 and all("held_wer" in c and "train_mwer" in c for c in curve)
    best = min(curve, key=lambda c: c["held_wer"])
    assert result["best_step"] == best["step"]
    student = load_scorer("student", result["student"], case="sentence", append_period=True, device="cpu")
    info = json.loads((Path(result["student"]) / "config.json").read_text())["rescorer_student"]
    assert info["mwer_scale"] == pytest.approx(best["scale"])
    held = [i for i, u in enumerate(lists.ids) if is_dev(u, 0.2)]
    errors = chosen = 0.0
    for i in held:
        s = np.array(student.compute(lists.texts[i], normalise=False).totals)
        chosen += lists.errors[i][int(np.argmax(lists.base[i] + info["mwer_scale"] * s))]
        errors += lists.errors[i][0]
    words = lists.ref_words[held].sum()
    assert best["held_wer"] == pytest.approx(100 * chosen / words, abs=1e-6)
    assert best["held_base_wer"] == pytest.approx(100 * errors / words)
    again = mwer_distill(replace(cfg, epochs=3), mwer)
    assert [c["held_wer"] for c in again["curve"][: len(curve)]] == pytest.approx([c["held_wer"] for c in curve])
    assert again["step"] > result["step"]


def test_an_export_that_cannot_be_written_is_one_line_and_keeps_the_student(tiny_models, tmp_path):
    """`task.export` under a file: exit 2 with one line naming the path and where the trained student is."""
    import subprocess
    import sys

    (tmp_path / "texts.txt").write_text("\n".join(demo_texts()[:40]) + "\n")
    (tmp_path / "afile").write_text("x")
    result = subprocess.run([sys.executable, "-m", "rescorer.cli", "task=distill", f"model.masked.path={tiny_models['bert']}",
                             "task.teacher.variant=original", f"task.texts=[{tmp_path}/texts.txt]", "task.max_texts=40",
                             "task.epochs=1", "task.batch_size=16", "task.dev_fraction=0.3", "task.heldout=false", "engine.progress=false",
                             f"task.export={tmp_path}/afile/student", f"engine.store={tmp_path}/s.sqlite",
                             f"out_dir={tmp_path}/out"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr[-2000:]
    assert "task.export=" in lines[0] and "afile" in lines[0] and str(tmp_path / "out" / "student") in lines[0]
    assert (tmp_path / "out" / "student" / "config.json").exists()
    assert (tmp_path / "afile").read_text() == "x"


def test_a_student_of_a_causal_teacher_ships_as_its_difference_to_the_encoder_it_started_from(tiny_models, tmp_path):
    """`task.export` of a student of an `ll` teacher: the difference is taken to `task.init` (the teacher is no
    encoder), and the student rebuilt from it scores as the trained one."""
    import subprocess
    import sys

    from rescorer.shipped import rebuild_student

    (tmp_path / "texts.txt").write_text("\n".join(demo_texts()[:40]) + "\n")
    result = subprocess.run([sys.executable, "-m", "rescorer.cli", "task=distill", "scorer@task.teacher=ll",
                             f"model.causal.path={tiny_models['gpt2']}", f"task.init={tiny_models['bert']}",
                             f"task.texts=[{tmp_path}/texts.txt]", "task.max_texts=40", "task.epochs=1",
                             "task.batch_size=16", "task.dev_fraction=0.3", "task.heldout=false",
                             "engine.progress=false", "engine.device=cpu", f"task.export={tmp_path}/shipped",
                             f"engine.store={tmp_path}/s.sqlite", f"out_dir={tmp_path}/out"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    rebuild_student(tmp_path / "shipped", tiny_models["bert"], tmp_path / "rebuilt")
    texts = demo_texts()[40:60]
    trained, rebuilt = (load_scorer("student", str(path), store=None, device="cpu").score(texts)
                        for path in (tmp_path / "out" / "student", tmp_path / "rebuilt"))
    np.testing.assert_allclose(rebuilt, trained, atol=0.05)
