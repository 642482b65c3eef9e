"""Re-tuning the toolkit's own weights (``task.retune``): the weights recovered from the lists, the ranges searched
around them, the tuned change against a naive loop with jiwer, and the report's note on what the re-tuning alone
does."""
from __future__ import annotations

import jiwer
import numpy as np
import pytest

import rescorer
from rescorer.combine import Column
from rescorer.combine.retune import base_parts, retune_columns, toolkit_weights
from rescorer.errors import ConfigError
from rescorer.types import Hypothesis, NBest, Utterance

from .conftest import DEMO
from .test_validation import run_cli


def planted(utterances: int = 60) -> NBest:
    """ESPnet-like lists, ``score = decoder + 0.1·lm`` exactly: in two thirds of the utterances the right hypothesis
    has the better ``lm`` by 1 and a worse ``score`` by 0.01–0.09 (a larger LM weight finds it), in the others the
    wrong one has the better ``lm`` by 1 and a worse ``score`` by 0.03–0.07 (a larger LM weight picks it)."""
    rng = np.random.default_rng(1)
    out = []
    for u in range(utterances):
        words = [f"w{u}", "a", "b", "c"][: 2 + u % 3]
        right, wrong = " ".join(words), " ".join(words + ["x"])
        helps = u % 3 != 0
        margin = rng.uniform(0.01, 0.09) if helps else rng.uniform(0.03, 0.07)
        lms = {right: -4.0, wrong: -5.0} if helps else {right: -5.0, wrong: -4.0}
        scores = {right: -2.0 - (margin if helps else 0.0), wrong: -2.0 - (0.0 if helps else margin)}
        first, second = (wrong, right) if helps else (right, wrong)
        hyps = tuple(Hypothesis(t, {"score": scores[t], "decoder": scores[t] - 0.1 * lms[t], "lm": lms[t]})
                     for t in (first, second))
        out.append(Utterance(f"u{u}", hyps, right))
    return NBest(out, fmt="jsonl")


def test_the_toolkits_weights_are_recovered_from_its_lists():
    fitted = toolkit_weights(planted(), "score", ["decoder", "lm"])
    assert fitted.weights == pytest.approx({"decoder": 1.0, "lm": 0.1}, abs=1e-9) and fitted.r2 == pytest.approx(1.0)


def test_espnets_decoding_weights_are_recovered_from_the_shipped_lists():
    """ESPnet writes score = (1 − ctc_weight)·decoder + ctc_weight·ctc + lm_weight·lm; the shipped demo was decoded
    with ctc_weight 0.4 and lm_weight 0.6 (scores rounded to 4 decimals in the files)."""
    nbest = rescorer.read_nbest(DEMO / "dev_other")
    fitted = toolkit_weights(nbest, "score", ["decoder", "ctc", "lm"])
    assert fitted.weights == pytest.approx({"decoder": 0.6, "ctc": 0.4, "lm": 0.6}, abs=2e-3)
    assert fitted.r2 > 0.9999


def test_a_retuned_column_is_searched_from_off_to_double_and_an_absent_one_by_the_base_spread():
    nbest = planted()
    (lm, words), fitted = retune_columns(nbest, Column("score"), ["lm", "words"])
    assert fitted.weights["lm"] == pytest.approx(0.1) and lm.range == (-0.1, 0.1) and lm.step == pytest.approx(0.01)
    assert 0.0 in lm.grid and lm.size == 21
    # the base differs by |margin| within an utterance and the word count by 1: half that spread per word
    margins = np.array([abs(u.hyps[0].scores["score"] - u.hyps[1].scores["score"]) for u in nbest])
    half = 0.5 * np.sqrt(np.mean((margins / 2) ** 2)) / 0.5
    assert words.range[1] == pytest.approx(float(f"{half:.2g}")) and words.range[0] == -words.range[1]


def test_retuning_lm_picks_the_change_a_naive_loop_with_jiwer_picks():
    nbest = planted()
    result = rescorer.rescore(sets={"dev": nbest}, base="score", retune=["lm"], bootstrap=10)
    grid = Column("lm", range=(-0.1, 0.1), step=0.01).grid
    wers = []
    for delta in grid:
        chosen = [max(u.hyps, key=lambda h: h.scores["score"] + delta * h.scores["lm"]).text for u in nbest]
        wers.append(jiwer.wer(nbest.refs(), chosen))
    best = min(range(len(grid)), key=lambda k: (round(wers[k], 12), abs(grid[k])))
    assert result.weights["lm"] == pytest.approx(grid[best])
    assert result.report.sets["dev"].rescored["wer"] == pytest.approx(100 * wers[best])
    assert 0.0 < grid[best] < 0.1  # an inner optimum: the lists were planted so that neither edge is best
    notes = " ".join(result.report.notes)
    assert "score ≈ 1·decoder + 0.1·lm" in notes and "(lm -0.1…+0.1)" in notes
    assert "they alone give 100% of the change" in notes  # no LM column: the re-tuning is all of it


@pytest.mark.parametrize("retune, message", [
    (["score"], "'score' is the base column (weight 1); re-tune its parts instead (choose from decoder, lm, words)"),
    (["nope"], "task.retune: no input column 'nope' in the tuning set (choose from decoder, lm, words, or all)"),
    ([3], "task.retune must be input column names (e.g. [lm, ctc, words]), all, auto or null, not [3]"),
])
def test_a_wrong_retune_is_one_line_with_the_columns_to_choose_from(retune, message):
    with pytest.raises(ConfigError) as error:
        rescorer.rescore(sets={"dev": planted()}, base="score", retune=retune, bootstrap=10)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_retune_all_on_the_command_line_tunes_every_espnet_component(tmp_path):
    result = run_cli("task=rescore", "data=demo", "scorer=[]", "task.retune=all", "task.base.name=score",
                     "+data.sets.dev_other.every=10", "+data.sets.test_clean.every=10", f"out_dir={tmp_path / 'out'}",
                     "task.bootstrap=10", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    tuned = (tmp_path / "out" / "tuned.yaml").read_text()
    for column in ("decoder", "ctc", "lm"):
        assert f"{column}:" in tuned
    assert "re-tuning the toolkit's own weights: score ≈ 0.6·decoder + 0.4·ctc + 0.6·lm" in result.stdout + result.stderr
    typo = run_cli("task=rescore", "data=demo", "scorer=[]", "task.retune=[lmm]", f"out_dir={tmp_path / 'typo'}",
                   cwd=tmp_path)
    lines = typo.stderr.strip().splitlines()
    assert typo.returncode == 2 and len(lines) == 1 and "no input column 'lmm'" in lines[0]
    assert "decoder, ctc, lm, words" in lines[0] and not (tmp_path / "typo").exists()


def noisy(utterances: int) -> NBest:
    """Lists whose ``lm`` is noise, not part of ``score``: it says nothing of which hypothesis is right."""
    rng = np.random.default_rng(2)
    out = []
    for u in range(utterances):
        right, wrong = f"w{u} a b", f"w{u} a x"
        first, second = (right, wrong) if u % 4 else (wrong, right)
        lms = rng.normal(size=2)
        hyps = tuple(Hypothesis(t, {"score": -1.0 - 0.1 * k, "decoder": -1.0 - 0.1 * k, "lm": lm})
                     for k, (t, lm) in enumerate(zip((first, second), lms)))
        out.append(Utterance(f"u{u}", hyps, right))
    return NBest(out, fmt="jsonl")


def test_auto_retunes_where_it_holds_on_half_splits_and_not_on_noise_or_small_sets():
    helps = rescorer.rescore(sets={"dev": planted(600)}, base="score", bootstrap=10)
    forced = rescorer.rescore(sets={"dev": planted(600)}, base="score", retune="all", bootstrap=10)
    assert helps.weights == forced.weights and set(helps.weights) == {"decoder", "lm"}
    assert any(n.startswith("task.retune=auto: tuning decoder, lm beside the LM columns did better on the held half "
                            "of 20 of 20") and n.endswith(": re-tuned") for n in helps.report.notes)
    noise = rescorer.rescore(sets={"dev": noisy(600)}, base="score", bootstrap=10)
    assert noise.weights == {} and any("not re-tuned (at least 15 needed" in n for n in noise.report.notes)
    small = rescorer.rescore(sets={"dev": planted(60)}, base="score", bootstrap=10)
    assert small.weights == {} and any("too few (< 500)" in n and "task.retune=[lm]" in n for n in small.report.notes)
    assert rescorer.rescore(sets={"dev": planted(600)}, base="score", retune=None, bootstrap=10).weights == {}


def test_auto_keeps_the_toolkits_weights_where_re_tuning_them_leaves_the_lm_without_weight():
    """An LM column that says nothing of which hypothesis is right, beside toolkit weights that pay to re-tune: the
    re-tuned fits give the LM no weight, so the gain would be the toolkit's weights alone, and auto keeps them; an
    LM column that helps keeps its weight, and auto re-tunes beside it."""
    rng = np.random.default_rng(3)
    lists = planted(600)
    with_noise = lists.with_columns({"student": rng.normal(size=lists.num_hypotheses)})
    column = {"student": {"range": [0, 1], "step": 0.1}}
    noise = rescorer.rescore(sets={"dev": with_noise}, base="score", columns=column, bootstrap=10)
    note = next(n for n in noise.report.notes if n.startswith("task.retune=auto"))
    assert "of 20 random half-splits" in note and ", but student kept a weight in only" in note, note
    assert note.endswith("task.retune=all re-tunes them anyway)") and set(noise.weights) == {"student"}
    # an LM that knows what the toolkit's LM gets wrong (every third utterance, whose right hypothesis comes first)
    knows = [value for u, utt in enumerate(lists) for value in ((0.0, -1.0) if u % 3 == 0 else (0.0, 0.0))]
    helps = rescorer.rescore(sets={"dev": lists.with_columns({"student": knows})}, base="score", columns=column,
                             bootstrap=10)
    assert any(n.startswith("task.retune=auto") and n.endswith(": re-tuned") for n in helps.report.notes), \
        helps.report.notes
    assert helps.weights["student"] > 0 and set(helps.weights) == {"student", "decoder", "lm"}


def test_lm_columns_a_scoring_run_added_are_not_taken_for_the_toolkits_own(tmp_path, tiny_causal):
    """Lists scored earlier (``task=score`` writes the LM's column into them) and tuned again without a scorer: the
    toolkit's own columns are those its score is made of, found by the fit; the LM column is not one of them."""
    from rescorer.pipeline import score_sets

    lm = rescorer.load_scorer("ll", str(tiny_causal), store=str(tmp_path / "s.sqlite"), progress=False)
    demo = rescorer.read_nbest(DEMO / "dev_other", refs=DEMO / "dev_other" / "ref.trn")
    score_sets({"dev": demo}, {"tiny": lm}, tmp_path / "scored", "demo")
    scored = rescorer.read_nbest(tmp_path / "scored" / "dev.jsonl")
    assert scored.columns == ["score", "decoder", "ctc", "lm", "tiny"]
    assert base_parts(scored, Column("score"), []) == ["decoder", "ctc", "lm"]
    note = rescorer.rescore(sets={"dev": scored}, base="score", retune=None, bootstrap=10).report.notes[-1]
    assert "toolkit's own column(s) decoder, ctc, lm:" in note, note


def test_auto_retunes_the_toolkits_columns_and_never_an_lm_column_the_lists_carry():
    """A column that would pay to tune (it knows which hypothesis is right where the toolkit's LM errs) carried by
    the lists, not asked for: ``auto`` re-tunes the toolkit's columns only (the base is ``decoder + 0.1·lm``), and
    ``all`` every input column, as it says."""
    lists = planted(600)
    knows = [value for u, utt in enumerate(lists) for value in ((0.0, -1.0) if u % 3 == 0 else (0.0, 0.0))]
    carried = lists.with_columns({"student": knows})
    auto = rescorer.rescore(sets={"dev": carried}, base="score", bootstrap=10)
    assert set(auto.weights) == {"decoder", "lm"}, auto.weights
    every = rescorer.rescore(sets={"dev": carried}, base="score", retune="all", bootstrap=10)
    assert set(every.weights) == {"decoder", "lm", "student"} and every.weights["student"] != 0
