"""The top-level Python API — names pinned, and ``rescorer.rescore``: tune on a dev list, apply to the others, report
and re-ranked lists, files only on request, the same as its steps (README's own examples: test_readme_examples.py)."""
from __future__ import annotations

import json
from pathlib import Path

import jiwer
import numpy as np
import pytest

import rescorer
from rescorer.options import RunOptions
from rescorer import pipeline
from rescorer.combine import Column
from rescorer.metrics import make_metric

from .conftest import DEMO, ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "formats"

EXCERPT = {"every": 15, "top": 5}  # 20 utterances × 5 hypotheses per demo set


def demo_set(name: str) -> dict:
    return {"nbest": str(DEMO / name), "refs": str(DEMO / name / "ref.trn"), **EXCERPT}


def read_demo(name: str) -> rescorer.NBest:
    return rescorer.io.sets.NBestSet(**demo_set(name)).read()


def test_public_api_names():
    for name in ("read_nbest", "write_nbest", "wer", "bleu", "load_scorer", "rescore", "nbest_from_generate",
                 "detect_format", "NBest", "Utterance", "Hypothesis", "Rescored", "pipeline", "shipped", "__version__",
                 "apply", "Tuned"):
        assert name in rescorer.__all__ and hasattr(rescorer, name), name
    for name in ("read_sets", "score_nbest", "prepare", "tune", "apply_weights", "apply_tuned", "rescore_loaded",
                 "evaluate"):
        assert callable(getattr(rescorer.pipeline, name)), name
    assert rescorer.io.nbest_from_generate is rescorer.nbest_from_generate


def test_the_task_the_api_and_the_pipeline_share_one_rescore():
    import rescorer.tasks.apply as apply_task
    import rescorer.tasks.rescore as rescore_task

    assert rescorer.rescore is rescorer.pipeline.rescore is rescore_task.rescore
    assert rescorer.apply is rescorer.pipeline.apply is apply_task.apply


def test_rescore_in_one_call_equals_its_steps_and_writes_only_what_it_is_asked(tmp_path, tiny_causal, monkeypatch):
    """README "Python API": ``rescorer.rescore`` and the same job step by step (``rescorer.pipeline``)."""
    monkeypatch.chdir(tmp_path)
    dev, test = read_demo("dev_other"), read_demo("test_clean")
    lm = rescorer.load_scorer("ll", str(tiny_causal), store="exp/store.sqlite", progress=False)
    result = rescorer.rescore(dev=dev, sets={"test_clean": test}, scorers={"ll": lm})
    assert set(result.weights) == {"ll"} and set(result.report.sets) == {"dev", "test_clean"}
    rescored = result.nbests["test_clean"]
    assert result.report.sets["test_clean"].rescored["wer"] == pytest.approx(
        100 * jiwer.wer(rescored.refs(), [u.hyps[0].text for u in rescored]), abs=1e-9)
    rescorer.write_nbest(rescored, "exp/rescored/test_clean")
    back = rescorer.read_nbest(tmp_path / "exp" / "rescored" / "test_clean")
    hypotheses = lambda nbest: [[(h.text, h.scores) for h in u.hyps] for u in nbest]  # noqa: E731
    assert hypotheses(back) == hypotheses(rescored)
    assert {p.name for p in (tmp_path / "exp").iterdir()} - {"store.sqlite-wal", "store.sqlite-shm"} == {
        "rescored", "store.sqlite"}  # rescore itself wrote nothing

    metric, base, columns = make_metric("wer"), Column("score"), [Column("ll", range=(0, 1), step=0.05)]
    search = pipeline.tune(pipeline.prepare(dev, {"ll": lm}, base, columns, metric), columns)
    assert search.weights == result.weights
    weights = np.array([search.weights[c.name] for c in columns])
    reranked, entry = pipeline.apply_weights(pipeline.prepare(test, {"ll": lm}, base, columns, metric), weights, metric)
    for key in ("baseline", "rescored", "oracle", "ci95", "changed_1best"):
        assert getattr(entry, key) == getattr(result.report.sets["test_clean"], key), key
    assert reranked == rescored


def test_rescore_tunes_input_columns_without_lms_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sets = {"dev_other": demo_set("dev_other"), "test_clean": demo_set("test_clean")}
    result = rescorer.rescore(dev="dev_other", sets=sets, columns={"ctc": {"range": [0, 1], "step": 0.5}}, bootstrap=100)
    assert list(tmp_path.iterdir()) == []
    assert set(result.weights) == {"ctc"} and result.report.tuned_on == "dev_other"
    for name, nbest in result.nbests.items():
        entry = result.report.sets[name]
        assert entry.outputs is None and entry.utterances == 20 and entry.hypotheses == 100
        assert entry.rescored["wer"] == pytest.approx(100 * jiwer.wer(nbest.refs(), nbest.select([0] * 20)))
        assert all("rescore" in h.scores for u in nbest for h in u.hyps)

    written = rescorer.rescore(dev="dev_other", sets=sets, columns={"ctc": {"range": [0, 1], "step": 0.5}}, bootstrap=100,
                               out_dir=tmp_path / "out")
    on_disk = json.loads((tmp_path / "out" / "report.json").read_text())
    assert on_disk == written.report.to_json() and written.nbests == result.nbests
    assert rescorer.Report.from_json(on_disk) == written.report  # report.json reads back as the same report
    for name, entry in on_disk["sets"].items():
        assert {k: v for k, v in entry.items() if k != "outputs"} == result.report.sets[name].to_json()
        assert Path(entry["outputs"]["1best"]).is_file()
    assert on_disk["search"]["plot"] is not None and result.report.search.plot is None


def test_rescore_takes_scorer_options_paths_and_refuses_what_it_cannot_use(tmp_path, tiny_causal):
    dev = read_demo("dev_other")
    loaded = rescorer.load_scorer("ll", str(tiny_causal), store=str(tmp_path / "s.sqlite"), progress=False)
    by_object = rescorer.rescore(dev=dev, scorers={"ll": loaded}, bootstrap=50)
    by_options = rescorer.rescore(dev=dev, scorers={"ll": {"kind": "ll", "model": str(tiny_causal)}}, bootstrap=50,
                                  engine={"store": str(tmp_path / "s.sqlite"), "progress": False})
    for run in (by_object, by_options):
        run.report.search.seconds = 0
    assert by_object.report == by_options.report and by_object.report.tuned_on == "dev"
    assert by_object.report.metric == "wer"

    with pytest.raises(rescorer.ConfigError, match="no references to tune on"):
        rescorer.rescore(dev=dev.with_utterances([u.__class__(u.id, u.hyps) for u in dev]), scorers={"ll": loaded})
    with pytest.raises(rescorer.ConfigError, match="named 'dev'"):
        rescorer.rescore(dev=dev, sets={"dev": dev}, scorers={"ll": loaded})
    with pytest.raises(rescorer.ConfigError, match="dev must be an NBest"):
        rescorer.rescore(dev=42)
    with pytest.raises(rescorer.ConfigError, match="unknown column ll key 'rnage', did you mean 'range'"):
        rescorer.rescore(dev=dev, scorers={"ll": loaded}, columns={"ll": {"rnage": [0, 1]}})


def test_pipeline_steps_without_hydra_match_the_task(tmp_path):
    """read_sets → prepare → tune → apply, as task=rescore runs them (no LM: the ctc column)."""
    corpus = rescorer.io.sets.Corpus("demo", {name: demo_set(name) for name in ("dev_other", "test_clean")}, {"name": "wer"})
    sets, metric = pipeline.read_sets(corpus)
    columns, base = [Column("ctc", range=(0, 1), step=0.5)], Column("score")
    prepared = {name: pipeline.prepare(nbest, {}, base, columns, make_metric("wer")) for name, nbest in sets.items()}
    search = pipeline.tune(prepared["dev_other"], columns)
    report = pipeline.rescore_loaded(sets, {}, metric, base=base, columns=columns, run=RunOptions(bootstrap=100),
                                     data="demo", out_dir=tmp_path / "out").report
    assert report.weights == search.weights
    evaluated = pipeline.evaluate(sets, metric, tmp_path / "eval", "demo")
    assert evaluated.sets["test_clean"].baseline == report.sets["test_clean"].baseline


@pytest.mark.parametrize("low, high, higher_is_better, words", [
    (-0.5, -0.1, False, "significantly better"), (0.1, 0.4, False, "significantly worse"),
    (-0.2, 0.3, False, "no significant change"), (0.0, 0.0, False, "unchanged"),
    (0.2, 1.5, True, "significantly better"), (-1.0, -0.1, True, "significantly worse"),
    (0.0, 0.4, False, "no significant change")])
def test_a_change_is_called_significant_only_when_its_interval_excludes_zero(low, high, higher_is_better, words):
    from rescorer.metrics import significance

    assert significance(low, high, higher_is_better) == words


@pytest.mark.parametrize("utterances, samples, equal, words", [
    (29, 1000, False, "too few utterances to tell (29 < 30)"), (30, 1000, False, "significantly better"),
    (300, 999, False, "too few resamples to tell (task.bootstrap=999 < 1000)"), (300, 1, True, "unchanged"),
    (2, 1000, True, "unchanged")])
def test_too_few_utterances_or_resamples_cannot_be_significant(utterances, samples, equal, words):
    from rescorer.metrics import significance

    assert significance(-0.5, -0.1, False, utterances, samples, equal) == words


def test_identical_results_under_one_resample_are_unchanged(tmp_path):
    dev = read_demo("dev_other")
    result = rescorer.rescore(dev=dev, columns={"ctc": {"range": [0, 0], "step": 1}}, bootstrap=1)
    assert result.report.sets["dev"].change == "unchanged (tuned here)"


@pytest.mark.parametrize("call, says", [
    (lambda m: rescorer.bleu(["a b"], ["a b"], bogus=1), "unknown bleu option 'bogus'"),
    (lambda m: rescorer.bleu(["a b"], ["a b"], tokenize="nope"), "unknown BLEU tokenize 'nope'"),
    (lambda m: rescorer.read_nbest(FIXTURES / "jsonl" / "nbest.jsonl", bogus=1), "unknown jsonl reader option 'bogus'"),
    (lambda m: rescorer.read_nbest(DEMO / "dev_other", bogus=1), "unknown espnet2 reader option 'bogus'"),
    (lambda m: rescorer.read_nbest("a\0b"), "path must be a path"),
    (lambda m: rescorer.load_scorer("ll", str(m), bogus=1), "unknown ll scorer option 'bogus'"),
    (lambda m: rescorer.shipped.student("nope"), "unknown shipped student 'nope'"),
    (lambda m: rescorer.Report.from_json({"sets": [1, 2]}), "a Report: sets must be a mapping, not [1, 2]"),
    (lambda m: rescorer.nbest_from_generate(None, None), "not NoneType"),
    (lambda m: rescorer.nbest_from_generate({"sequences": []}, None), "not dict"),
], ids=["bleu-option", "bleu-tokenize", "reader-option", "espnet-reader-option", "nul-path", "scorer-option",
        "shipped-student", "report-sets-list", "generate-none", "generate-dict"])
def test_api_misuse_is_one_rescorer_error_naming_it(call, says, tiny_causal):
    with pytest.raises(rescorer.RescorerError) as caught:
        call(tiny_causal)
    assert says in str(caught.value), str(caught.value)


def test_the_library_prints_nothing_when_logging_is_disabled(capsys, tmp_path):
    """The table, the summary and the warnings go through the ``rescorer`` logger: a Python program can silence
    them, and sees only the warnings until it configures logging."""
    import logging

    sets = {"dev_other": {"nbest": str(DEMO / "dev_other"), "refs": str(DEMO / "dev_other" / "ref.trn"), **EXCERPT}}
    columns = {"ctc": {"range": [0, 1], "step": 0.5}}
    logging.disable()
    try:
        result = rescorer.rescore(sets=sets, base="score", columns=columns, out_dir=tmp_path / "quiet", bootstrap=20)
    finally:
        logging.disable(logging.NOTSET)
    assert result.weights and (tmp_path / "quiet" / "report.md").exists() and capsys.readouterr() == ("", "")
    rescorer.rescore(sets=sets, base="score", columns=columns, out_dir=tmp_path / "default", bootstrap=20)
    shown = capsys.readouterr()
    assert shown.out == "" and "WER" not in shown.err  # the table is INFO: shown once the program asks for it


def test_results_and_lists_print_as_one_short_line():
    sets = {"dev_other": {"nbest": str(DEMO / "dev_other"), "refs": str(DEMO / "dev_other" / "ref.trn"), **EXCERPT}}
    result = rescorer.rescore(sets=sets, base="score", columns={"ctc": {"range": [0, 1], "step": 0.5}}, bootstrap=10)
    entry = result.report.sets["dev_other"]
    assert repr(result) == (f"Rescored(weights={result.weights}, dev_other: wer {entry.baseline['wer']:.2f} → "
                            f"{entry.rescored['wer']:.2f}, {entry.changed_1best} of 20 1-bests changed)")
    assert repr(result.nbests["dev_other"]) == (
        f"NBest(fmt='espnet2', 20 utterances, 100 hypotheses, columns=['score', 'decoder', 'ctc', 'lm', 'rescore'], "
        f"source={str(DEMO / 'dev_other')!r})")


def test_apply_right_after_rescore_reuses_its_scorers_and_store(tmp_path, tiny_causal, monkeypatch):
    """In one process, ``rescorer.apply(sets, result.tuned)`` scores with the scorers the tuning run loaded (their
    store included): texts scored while tuning are not scored again."""
    lm = rescorer.load_scorer("ll", str(tiny_causal), store=str(tmp_path / "store.sqlite"), progress=False)
    dev, test = read_demo("dev_other"), read_demo("test_clean")
    result = rescorer.rescore(dev=dev, sets={"test_clean": test}, scorers={"ll": lm}, bootstrap=50)
    adapter, calls = type(lm.adapter), []
    forward = adapter.forward
    monkeypatch.setattr(adapter, "forward", lambda self, *args: calls.append(1) or forward(self, *args))
    applied = rescorer.apply({"test_clean": test}, result.tuned, bootstrap=50)
    assert calls == []  # every text came from the store
    assert applied.nbests["test_clean"] == result.nbests["test_clean"]
    fresh = rescorer.apply({"test_clean": test}, result.tuned, engine={"progress": False}, bootstrap=50)
    assert calls and fresh.nbests["test_clean"] == result.nbests["test_clean"]  # a new scorer, no store: computed


def test_a_jsonl_set_written_as_it_is_reranked_is_the_whole_reranked_list_written_once_and_copied(tmp_path):
    source = tmp_path / "dev.jsonl"
    rescorer.write_nbest(read_demo("dev_other"), source, "jsonl")
    result = rescorer.rescore(sets={"dev": str(source)}, columns={"ctc": {"range": [0, 1], "step": 0.5},
                                                                  "lm": {"range": [1, 1]}},
                              bootstrap=10, out_dir=tmp_path / "out", retune=None)
    assert result.report.sets["dev"].changed_1best > 0  # re-ranked, not only given a column
    outputs = json.loads((tmp_path / "out" / "report.json").read_text())["sets"]["dev"]["outputs"]
    native, canonical = Path(outputs["native"]), Path(outputs["jsonl"])
    assert native != canonical and native.read_bytes() == canonical.read_bytes()
    rescorer.write_nbest(result.nbests["dev"], tmp_path / "again.jsonl")
    assert canonical.read_bytes() == (tmp_path / "again.jsonl").read_bytes()
    assert rescorer.read_nbest(canonical).texts() == result.nbests["dev"].texts()
    best = [f"{u.id} {u.hyps[0].text}" for u in result.nbests["dev"]]
    assert Path(outputs["1best"]).read_text().splitlines() == best
