"""Tuning tells the truth: LM sums matched to a per-token base, a weight on the edge of its range reported, a dev
set that cannot inform the weights keeps the base, and each format's natural base column."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import rescorer
from rescorer.combine import Column, Features, fast_search
from rescorer.io import natural_base
from rescorer.io.sets import NBestSet
from rescorer.metrics import NBestStats, make_metric
from rescorer.combine.scales import base_per_token, match_scales, search_warnings
from rescorer.shipped import shipped_model
from rescorer.types import Hypothesis, NBest, Utterance

from .conftest import DEMO, ROOT, needs_minilm

FORMATS = ROOT / "tests" / "fixtures" / "formats"


def per_token_lists(tmp_path: Path) -> dict[str, Path]:
    """The demo's dev_other 5-best with a per-token base (ESPnet's decoder score over the words), as HyPoradise
    and as fairseq files, each split into a tuning half and a held-out half."""
    nbest = NBestSet(str(DEMO / "dev_other"), str(DEMO / "dev_other" / "ref.trn"), top=5).read()
    per_token = [[h.scores["decoder"] / max(len(h.words), 1) for h in u.hyps] for u in nbest]
    records = [{"id": u.id, "input": [h.text.lower() for h in u.hyps], "output": u.ref.lower(), "am_score": scores}
               for u, scores in zip(nbest, per_token)]
    fairseq = NBest([Utterance(str(i), tuple(Hypothesis(h.text, {"score": s}) for h, s in zip(u.hyps, scores)), u.ref)
                     for i, (u, scores) in enumerate(zip(nbest, per_token))], fmt="fairseq")
    half, paths = len(records) // 2, {}
    for part, rows in (("dev", slice(0, half)), ("held", slice(half, None))):
        paths[f"hyporadise_{part}"] = tmp_path / f"{part}.json"
        paths[f"hyporadise_{part}"].write_text(json.dumps(records[rows]))
        paths[f"fairseq_{part}"] = tmp_path / f"generate-{part}.txt"
        rescorer.write_nbest(fairseq.with_utterances(fairseq.utterances[rows]), paths[f"fairseq_{part}"])
    return paths


@pytest.mark.slow
@needs_minilm
@pytest.mark.parametrize("fmt", ["hyporadise", "fairseq"])
def test_a_per_token_base_gets_per_token_lm_columns_by_default(fmt, tmp_path, tmp_path_factory):
    paths = per_token_lists(tmp_path)
    student = {"kind": "student", "model": shipped_model("student_mse"), "case": "sentence", "append_period": True}
    engine = {"store": str(tmp_path_factory.getbasetemp() / "scales.sqlite"), "progress": False}
    runs = {penalty: rescorer.rescore(dev=paths[f"{fmt}_dev"], sets={"held": paths[f"{fmt}_held"]}, scorers={"student": student},
                                      metric="wer", columns={"student": {"penalty": penalty}}, engine=engine,
                                      bootstrap=100)
            for penalty in ("auto", "none", "tokens")}
    assert runs["none"].weights == {"student": 0.0}           # sums drown a per-token base: nothing can be tuned
    assert runs["auto"].weights == runs["tokens"].weights != {"student": 0.0}
    assert runs["auto"].report.penalties == {"student": "tokens"} and "per token" in runs["auto"].report.notes[0]
    held = {p: r.report.sets["held"].rescored["wer"] for p, r in runs.items()}
    assert held["auto"] == held["tokens"] < held["none"]


def planted(utterances: int = 40, length_grows: bool = True) -> NBest:
    """Lists whose right hypothesis has the better ``lm`` by 1 but a worse ``score`` by 0.95–0.96: every weight
    from 0.96 on finds it."""
    rng = np.random.default_rng(0)
    out = []
    for u in range(utterances):
        words = ["w"] * (3 + u % 9)
        hyps = [Hypothesis(" ".join(words + ["x"]), {"score": -1.0 * len(words) if length_grows else -1.0, "lm": -5.0}),
                Hypothesis(" ".join(words), {"score": -1.0 * len(words) - 0.95 - rng.random() * 0.01, "lm": -4.0})]
        out.append(Utterance(f"u{u}", tuple(hyps), " ".join(words)))
    return NBest(out, fmt="jsonl")


def test_a_weight_on_the_edge_of_its_range_is_reported_with_a_wider_range():
    nbest = planted()
    columns = [Column("lm", range=(0, 1), step=0.1)]
    features = Features.of(nbest, Column("score"), columns)
    result = fast_search(features, NBestStats.compute(nbest, make_metric("wer")), columns)
    assert result.weights == {"lm": 1.0}
    assert search_warnings(result, columns) == [
        "the weight of lm (1) is on the edge of its range [0, 1]: the best may lie beyond; try "
        "task.columns.lm.range=[0, 2]"]
    wider = [Column("lm", range=(0, 3), step=0.1)]
    assert search_warnings(fast_search(Features.of(nbest, Column("score"), wider),
                                       NBestStats.compute(nbest, make_metric("wer")), wider), wider) == []


def test_a_dev_set_that_cannot_inform_the_weights_keeps_the_base_and_says_so(caplog):
    nbest = planted()
    flat = nbest.with_columns({"flat": [0.0] * nbest.num_hypotheses})
    result = rescorer.rescore(dev=flat, base="score", columns={"flat": {"range": [0, 1], "step": 0.25}})
    assert result.weights == {"flat": 0.0}
    assert result.report.warnings[0].startswith("every weight setting gives the same dev result")
    assert result.report.warnings[0].endswith("so each keeps the smallest its range allows (flat=0)")
    said = [r.getMessage() for r in caplog.records if r.name == "rescorer" and r.levelname == "WARNING"]
    assert len(said) == 1 and said[0].startswith("rescorer: warning: every weight setting")  # once, as a warning
    fixed = rescorer.rescore(dev=flat.with_columns({"fixed": [0.0] * nbest.num_hypotheses}), base="score",
                             columns={"flat": {"range": [0, 1], "step": 0.25}, "fixed": {"range": [1, 1]}})
    assert fixed.weights == {"flat": 0.0, "fixed": 1.0}  # a fixed weight is applied, and the warning says so
    assert fixed.report.warnings[0].endswith("(flat=0, fixed=1)")


def test_the_base_per_token_is_judged_from_the_data_before_the_format():
    sums, flat = planted(), planted(length_grows=False)
    assert not base_per_token(sums, Column("score"))[0] and base_per_token(flat, Column("score"))[0]
    assert base_per_token(replace(sums, fmt="fairseq"), Column("score"))[0] is False  # data outweighs the format
    tiny = sums.with_utterances(sums.utterances[:3])
    assert base_per_token(replace(tiny, fmt="hyporadise"), Column("score"))[0]  # too little data: the format says
    decided, notes = match_scales([Column("lm", penalty="auto"), Column("ctc", penalty="auto")], Column("score"), flat,
                                  ["lm"])
    assert [c.penalty for c in decided] == ["tokens", "none"] and "lm" in notes[0]


@pytest.mark.parametrize("path, base", [
    ("espnet2/decode_asr_lm/dev_clean", "score"), ("fairseq/results/generate-test.txt", "score"),
    ("hyporadise/test_chime4.json", "am_score"), ("moses/nbest.old-labels.txt", "total"),
    ("marian/nbest.align.txt", "total"), ("sockeye/nbest.factored.jsonl", "score"),
    ("mlm-scoring/dev-clean.am.json", "score")])
def test_each_format_names_its_natural_base_column(path, base):
    assert natural_base(rescorer.read_nbest(FORMATS / path)) == base


def test_a_list_without_a_natural_base_names_its_columns():
    with pytest.raises(rescorer.ConfigError, match="task.base.name=… \\(columns: am, graph, lm\\)"):
        natural_base(rescorer.read_nbest(FORMATS / "kaldi" / "nbest"))
