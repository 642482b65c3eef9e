"""Interpolation and weight search: planted optima are recovered, fast equals grid, bootstrap equals a naive loop."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import msgspec
import pytest

from rescorer import read_nbest
from rescorer.report import plots
from rescorer.combine import Column, Features, fast_search, grid_search, weight_grid
from rescorer.combine.interpolate import best_ranks, totals
from rescorer.errors import ConfigError
from rescorer.metrics import NBestStats, make_metric, paired_bootstrap
from rescorer.types import Hypothesis, NBest, Utterance

from .conftest import DEMO, LIBRISPEECH, MOSES, need

WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima".split()


def planted(weights: dict[str, float], utterances: int = 120, n: int = 6, seed: int = 0) -> NBest:
    """Random columns, where the hypothesis that is best under ``weights`` (and only it) equals the reference."""
    rng = np.random.default_rng(seed)
    names = ["score", *weights]
    w = np.array([1.0, *weights.values()])
    utts = []
    for u in range(utterances):
        ref = " ".join(rng.choice(WORDS, 5))
        cols = rng.normal(size=(n, len(names)))
        best = int((cols @ w).argmax())
        hyps = []
        for k in range(n):
            words = ref.split()
            if k != best:  # every other hypothesis has 1–3 word errors
                for i in rng.choice(5, rng.integers(1, 4), replace=False):
                    words[i] = "zulu"
            hyps.append(Hypothesis(" ".join(words), dict(zip(names, map(float, cols[k])))))
        utts.append(Utterance(f"u{u}", tuple(hyps), ref))
    return NBest(utts)


@pytest.mark.parametrize("planted_weights", [{"lm": 0.35}, {"lm": 0.6, "ctc": 0.3}])
def test_both_searches_recover_planted_weights(planted_weights):
    nbest = planted(planted_weights)
    columns = [Column(name, range=(0, 1), step=0.05) for name in planted_weights]
    features = Features.of(nbest, Column("score"), columns)
    stats = NBestStats.compute(nbest, make_metric("wer"))
    fast = fast_search(features, stats, columns)
    grid = grid_search(nbest, features, stats, columns)
    assert fast.dev == pytest.approx(0.0) and grid.dev == pytest.approx(0.0)
    assert fast.weights == grid.weights
    for name, value in planted_weights.items():  # the optimum is an interval around the planted weight
        assert abs(fast.weights[name] - value) <= 0.1


def test_coordinate_ascent_finds_planted_optimum_of_three_weights():
    planted_weights = {"lm": 0.4, "ctc": 0.7, "len": 0.2}
    nbest = planted(planted_weights, utterances=150, seed=3)
    columns = [Column(name, range=(0, 1), step=0.1) for name in planted_weights]
    features = Features.of(nbest, Column("score"), columns)
    stats = NBestStats.compute(nbest, make_metric("wer"))
    result = fast_search(features, stats, columns, restarts=6)
    exhaustive = fast_search(features, stats, columns, exhaustive_up_to=3)
    assert result.dev == pytest.approx(exhaustive.dev) == pytest.approx(0.0)
    assert result.evaluated < len(weight_grid(columns))


def test_ties_go_to_the_smallest_change_and_to_the_largest_weights_on_the_paper_grid():
    nbest = planted({"lm": 0.5}, utterances=40)
    nbest = nbest.with_columns({"flat": [0.0] * nbest.num_hypotheses})  # a column that never changes the ranking
    columns = [Column("lm", range=(0, 1), step=0.05), Column("flat", range=(0, 1), step=0.1)]
    features = Features.of(nbest, Column("score"), columns)
    stats = NBestStats.compute(nbest, make_metric("wer"))
    fast, grid = fast_search(features, stats, columns), grid_search(nbest, features, stats, columns)
    assert fast.dev == grid.dev
    assert fast.weights["flat"] == 0.0 and grid.weights["flat"] == 1.0
    best = fast.values == fast.values.min()   # of the equally good settings, the one nearest the base
    assert fast.weights["lm"] == min(fast.tried[best, 0]) and grid.weights["lm"] == max(grid.tried[grid.values == grid.dev, 0])


def test_length_penalties_follow_the_spec():
    hyp = Hypothesis("a b c d", {"score": -2.0, "lm": -8.0})
    nbest = NBest([Utterance("u", (hyp,), "a b c d")])
    values = {}
    for penalty in ("none", "gnmt", "tokens"):
        features = Features.of(nbest, Column("score"), [Column("lm", penalty=penalty, alpha=0.6)], {"lm": [5]})
        values[penalty] = features.values[0, 0, 1]
    assert values == pytest.approx({"none": -8.0, "gnmt": -8.0 / ((5 + 5) / 6) ** 0.6, "tokens": -8.0 / 5})
    words = Features.of(nbest, Column("score"), [Column("words")])
    assert words.values[0, 0, 1] == 4  # the word bonus column counts words


def test_flat_columns_give_the_same_features_as_the_score_dicts():
    nbest = planted({"lm": 0.5, "ctc": 0.3}, utterances=30, seed=5)
    ragged = nbest.with_utterances([replace(u, hyps=u.hyps[: i % 7]) for i, u in enumerate(nbest)])  # some empty
    columns = [Column("lm", penalty="gnmt", alpha=0.6), Column("ctc", penalty="tokens"), Column("words")]
    tokens = {"lm": np.random.default_rng(0).integers(1, 9, ragged.num_hypotheses).tolist()}
    flat = {name: ragged.column_array(name) for name in ("score", "lm", "ctc")}
    assert flat["lm"].tolist() == [h.scores["lm"] for u in ragged for h in u.hyps]
    bare = ragged.with_utterances([replace(u, hyps=tuple(msgspec.structs.replace(h, scores={}) for h in u.hyps)) for u in ragged])
    by_dicts = Features.of(ragged, Column("score"), columns, tokens)
    by_arrays = Features.of(bare, Column("score"), columns, tokens, flat_columns=flat)
    for field in ("values", "valid", "hyps_per_utterance"):
        np.testing.assert_array_equal(getattr(by_arrays, field), getattr(by_dicts, field))
    assert by_arrays.names == by_dicts.names
    with pytest.raises(ConfigError, match="has 2 values for"):
        Features.of(bare, Column("score"), [], flat_columns={"score": flat["score"][:2]})


@pytest.mark.parametrize("name, label, best", [("wer", "dev WER (%)", min), ("bleu", "dev BLEU", max)])
def test_weight_plot_asks_the_metric_for_its_scale_label_and_direction(name, label, best, monkeypatch, tmp_path):
    nbest = planted({"lm": 0.5}, utterances=20)
    columns = [Column("lm", range=(0, 1), step=0.25)]
    metric = make_metric(name)
    result = grid_search(nbest, Features.of(nbest, Column("score"), columns), NBestStats.compute(nbest, metric), columns)
    monkeypatch.setattr(plots, "save", lambda fig, path: fig)
    for figure in (plots.weight_plot(result, ["lm"], metric, tmp_path / "w.png"),):
        axis = figure.axes[0]
        assert axis.get_ylabel() == label
        xs = np.unique(result.tried[:, 0])
        expected = [best(result.values[result.tried[:, 0] == x]) * metric.scale for x in xs]
        np.testing.assert_allclose(axis.lines[0].get_ydata(), expected)
        plots.pyplot().close(figure)


def test_missing_column_and_bad_penalty_are_clear_errors():
    nbest = planted({"lm": 0.5}, utterances=3)
    with pytest.raises(ConfigError, match="no score column 'pll'"):
        Features.of(nbest, Column("score"), [Column("pll")])
    with pytest.raises(ConfigError, match="penalty"):
        Column("lm", penalty="length")


@pytest.mark.parametrize("block", [None, 7], ids=["resamples at once", "7 resamples at a time"])
def test_bootstrap_interval_equals_a_naive_loop(block, monkeypatch):
    nbest = read_nbest(DEMO / "dev_other", refs=DEMO / "dev_other" / "ref.trn")
    stats = NBestStats.compute(nbest, make_metric("wer"))
    base, oracle = stats.baseline_ranks(), stats.oracle_ranks()
    if block:
        monkeypatch.setattr("rescorer.metrics.BOOTSTRAP_BLOCK", block * len(nbest))
    got = paired_bootstrap(stats, base, oracle, samples=200, seed=7)
    rng = np.random.default_rng(7)
    draws = rng.integers(0, len(nbest), size=(200, len(nbest)))
    import jiwer

    diffs = []
    for d in draws:
        refs = [nbest.utterances[i].ref for i in d]
        diffs.append(jiwer.wer(refs, [nbest.utterances[i].hyps[oracle[i]].text for i in d])
                     - jiwer.wer(refs, [nbest.utterances[i].hyps[0].text for i in d]))
    assert got["low"] == pytest.approx(np.quantile(diffs, 0.025), abs=1e-12)
    assert got["high"] == pytest.approx(np.quantile(diffs, 0.975), abs=1e-12)
    assert got["high"] < 0 and got["p_better"] == 1.0


@pytest.mark.slow
@pytest.mark.parametrize("tuned", [["ctc"], ["ctc", "lm"]])
def test_fast_equals_grid_on_real_librispeech(tuned):
    path = need(LIBRISPEECH) / "dev_other"
    nbest = read_nbest(path, refs=path / "references" / "ref_wer.trn")
    nbest = nbest.with_utterances(nbest.utterances[:600])
    columns = [Column(name, step=0.05 if k == 0 else 0.1) for k, name in enumerate(tuned)]
    features = Features.of(nbest, Column("decoder"), columns)
    stats = NBestStats.compute(nbest, make_metric("wer"))
    fast, grid = fast_search(features, stats, columns), grid_search(nbest, features, stats, columns)
    assert fast.dev == pytest.approx(grid.dev, abs=1e-12)
    np.testing.assert_allclose(fast.values, grid.values, atol=1e-12)
    ties = grid.tried[np.abs(grid.values - grid.dev) <= 1e-12]   # the same optimum; each rule's pick among its ties
    nearest = ties[np.lexsort((*ties.T[::-1], np.round(np.linalg.norm(ties, axis=1), 10)))[0]]
    assert list(fast.weights.values()) == list(nearest)
    assert list(grid.weights.values()) == list(ties[np.lexsort(tuple(-ties.T[::-1]))[0]])


@pytest.mark.slow
def test_fast_equals_grid_on_real_moses_bleu():
    nbest = read_nbest(need(MOSES) / "nbest.out", refs=MOSES / "reference.txt")
    metric = make_metric("bleu", lowercase=True, tokenize="none", force=True)
    columns = [Column("lm_0", range=(0, 2), step=0.1)]
    features = Features.of(nbest, Column("total"), columns)
    stats = NBestStats.compute(nbest, metric)
    fast, grid = fast_search(features, stats, columns), grid_search(nbest, features, stats, columns)
    assert fast.weights == grid.weights
    np.testing.assert_allclose(fast.values, grid.values, atol=1e-9)
    assert best_ranks(features, np.array([0.0])).tolist() == [0] * len(nbest)  # weight 0 keeps Moses' 1-best


def test_minus_inf_under_weight_zero_is_absent_and_report_matches_outputs(tmp_path):
    """0 · (−inf) once gave NaN: the report then disagreed with the written lists. Weight 0 drops the column;
    −inf under a non-zero weight sorts last; the written ranking is the reported one."""
    from rescorer.pipeline import rerank

    hyps = [Hypothesis("a b c", {"score": -1.0, "lm": -np.inf}), Hypothesis("a b", {"score": -2.0, "lm": -3.0}),
            Hypothesis("x", {"score": -75.0, "lm": -1.0})]
    nbest = NBest((Utterance("u1", tuple(hyps), ref="a b"),))
    features = Features.of(nbest, Column("score"), [Column("lm")])
    assert totals(features, np.array([0.0]))[0].tolist() == [-1.0, -2.0, -75.0]
    assert totals(features, np.array([0.5]))[0].tolist() == [-np.inf, -3.5, -75.5]
    for weight, first in ((0.0, "a b c"), (0.5, "a b")):
        ranks = best_ranks(features, np.array([weight]))
        new, _ = rerank(nbest, features, np.array([weight]))
        assert new.utterances[0].hyps[0].text == first == nbest.utterances[0].hyps[int(ranks[0])].text
        assert not any(np.isnan(h.scores["rescore"]) for h in new.utterances[0].hyps)


def test_robust_search_keeps_a_weight_only_as_large_as_the_dev_set_justifies():
    """A planted weight survives (its gain is far outside noise); a column of pure noise gets weight 0 where the
    argmax rule chases it; the chosen setting is within the bootstrap interval of the best by construction."""
    from rescorer.combine.robust import robust_search

    nbest = planted({"lm": 0.5}, utterances=300)
    rng = np.random.default_rng(3)
    noisy = nbest.with_columns({"noise": rng.normal(size=nbest.num_hypotheses)})
    columns = [Column("lm", step=0.1), Column("noise", step=0.1)]
    features = Features.of(noisy, Column("score"), columns)
    stats = NBestStats.compute(noisy, make_metric("wer"))
    argmax = fast_search(features, stats, columns)
    robust = robust_search(features, stats, columns, samples=200)
    assert robust.weights["lm"] > 0.2 and robust.weights["noise"] == 0.0
    assert np.hypot(*robust.weights.values()) <= np.hypot(*argmax.weights.values())
    assert robust.dev >= argmax.dev and robust.dev_ci[0] <= robust.dev <= robust.dev_ci[1]
    tiny = planted({"lm": 0.0}, utterances=40, seed=5).with_columns({"lm2": rng.normal(size=240)})
    one = [Column("lm2", step=0.1)]
    result = robust_search(Features.of(tiny, Column("score"), one), NBestStats.compute(tiny, make_metric("wer")), one)
    assert result.weights == {"lm2": 0.0}


def test_half_splits_tune_on_one_half_and_measure_the_other():
    from rescorer.combine import Search
    from rescorer.combine.heldout import half_splits, subset
    from rescorer.metrics import WER

    nbest = planted({"lm": 0.5}, utterances=60)
    columns = [Column("lm", step=0.1)]
    features, stats = Features.of(nbest, Column("score"), columns), NBestStats.compute(nbest, WER())
    study = half_splits(features, stats, columns, {"fast": Search.of("fast"), "robust": Search.of(
        {"name": "robust", "samples": 50})}, splits=3, seed=4)
    assert len(study["fast"]["deltas"]) == len(study["robust"]["weights"]) == 3
    order = np.random.default_rng(4).permutation(60)
    tune, held = np.sort(order[:30]), np.sort(order[30:])
    weight = fast_search(*subset(features, stats, tune), columns).weights["lm"]
    assert study["fast"]["weights"][0] == {"lm": weight}
    refs = [nbest.utterances[i].ref for i in held]
    chosen = [nbest.utterances[i].hyps[int(r)].text for i, r in
              zip(held, best_ranks(subset(features, stats, held)[0], np.array([weight])))]
    first = [nbest.utterances[i].hyps[0].text for i in held]
    import jiwer
    assert study["fast"]["deltas"][0] == pytest.approx(100 * (jiwer.wer(refs, chosen) - jiwer.wer(refs, first)))
    assert study["fast"]["mean"] == pytest.approx(np.mean(study["fast"]["deltas"]))


def test_reranking_sorts_each_utterance_as_a_stable_sort_by_total_does():
    """Lists of different lengths, tied totals (the toolkit's order kept) and −inf totals (last), against
    Python's own stable sort of each utterance."""
    from rescorer.pipeline.rerank import rerank

    rng = np.random.default_rng(5)
    utts = []
    for u in range(200):
        n = int(rng.integers(0, 8))
        values = rng.choice([-1.0, -2.0, -np.inf, *rng.normal(size=3)], size=(n, 2))
        utts.append(Utterance(f"u{u}", tuple(Hypothesis(f"h{k}", {"score": a, "lm": b}) for k, (a, b) in
                                             enumerate(values))))
    nbest = NBest(utts)
    weights = np.array([0.5])
    new, _ = rerank(nbest, Features.of(nbest, Column("score"), [Column("lm")]), weights)
    for before, after in zip(nbest, new):
        total = [h.scores["score"] + 0.5 * h.scores["lm"] for h in before.hyps]
        order = sorted(range(len(total)), key=lambda k: -total[k])
        assert [h.text for h in after.hyps] == [before.hyps[k].text for k in order]
        assert [h.scores["rescore"] for h in after.hyps] == [total[k] for k in order]


def test_a_total_depends_on_its_own_hypothesis_alone_even_beside_one_that_overflows():
    """Two tiny totals (-2.5e-323 vs -2e-323: the second is higher) keep their order whether or not another
    utterance's sum overflows on the way in the same call."""
    tiny = [[-2.5e-323, 0.0], [-2e-323, 0.0]]
    huge = [[-1e308, -1e308], [-1e308, -1.5e308]]
    columns = [Column("a"), Column("b")]
    weights = np.array([1.0])
    alone = Features.gathered(columns, np.array([2]), [np.array([v[0] for v in tiny]), np.array([v[1] for v in tiny])],
                              [None, None])
    beside = Features.gathered(columns, np.array([2, 2]), [np.array([v[0] for v in tiny + huge]),
                                                           np.array([v[1] for v in tiny + huge])], [None, None])
    assert best_ranks(alone, weights).tolist() == [1]
    assert best_ranks(beside, weights).tolist() == [1, 0]
    assert totals(beside, weights)[0].tolist() == totals(alone, weights)[0].tolist() == [-2.5e-323, -2e-323]
    assert totals(beside, weights)[1].tolist() == [-np.inf, -np.inf]  # beyond the float range: sorts last
