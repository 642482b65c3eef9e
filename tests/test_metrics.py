"""Metrics: every corpus WER/BLEU we compute equals jiwer / sacrebleu called directly on the same strings."""
from __future__ import annotations

import jiwer
import numpy as np
import pytest
import sacrebleu
from sacrebleu.metrics import BLEU

import rescorer
from rescorer.metrics import WER, BLEUMetric, NBestStats

from .conftest import DEMO, LIBRISPEECH, MOSES, need


def naive_oracle_wer(nbest) -> float:
    """Oracle by brute force: per utterance, the hypothesis with the fewest jiwer errors (first on ties)."""
    errors = words = 0
    for utt in nbest:
        counts = []
        for hyp in utt.hyps:
            out = jiwer.process_words(utt.ref, hyp.text)
            counts.append((out.substitutions + out.deletions + out.insertions, out.hits + out.substitutions + out.deletions))
        best = min(counts, key=lambda c: c[0])
        errors, words = errors + best[0], words + best[1]
    return errors / words


def read_librispeech(name):
    root = need(LIBRISPEECH) / name
    return rescorer.read_nbest(root, refs=root / "references" / "ref_wer.trn")


@pytest.mark.slow
@pytest.mark.parametrize("name, baseline, oracle", [
    ("dev_clean", 1.70, 0.59), ("dev_other", 3.61, 1.76), ("test_clean", 1.81, 0.67)])
def test_librispeech_baseline_and_oracle_wer(name, baseline, oracle):
    nbest = read_librispeech(name)
    stats = NBestStats.compute(nbest, WER())
    got_baseline = stats.score(stats.baseline_ranks())
    got_oracle = stats.score(stats.oracle_ranks())
    assert got_baseline == pytest.approx(jiwer.wer(nbest.refs(), [u.hyps[0].text for u in nbest]), abs=1e-12)
    assert got_oracle == pytest.approx(jiwer.wer(nbest.refs(), nbest.select(stats.oracle_ranks())), abs=1e-12)
    assert got_oracle == pytest.approx(naive_oracle_wer(nbest), abs=1e-12)
    assert round(100 * got_baseline, 2) == baseline
    assert round(100 * got_oracle, 2) == oracle


def test_random_selections_match_jiwer():
    nbest = rescorer.read_nbest(DEMO / "dev_other", refs=DEMO / "dev_other" / "ref.trn")
    stats = NBestStats.compute(nbest, WER())
    rng = np.random.default_rng(0)
    for _ in range(5):
        ranks = rng.integers(0, stats.lengths)
        assert stats.score(ranks) == pytest.approx(jiwer.wer(nbest.refs(), nbest.select(ranks)), abs=1e-12)


def test_wer_standardize_transform_matches_jiwer():
    refs, hyps = ["Hello <unk> world", "it's fine"], ["hello world", "it is Fine too"]
    expected = jiwer.wer(refs, hyps, reference_transform=jiwer.wer_standardize, hypothesis_transform=jiwer.wer_standardize)
    assert rescorer.wer(refs, hyps, transform="standardize") == pytest.approx(100 * expected)  # in percent


def test_public_wer_and_bleu_match_peers():
    refs = ["the cat sat on the mat", "a quick brown fox", ""]
    hyps = ["the cat sat on mat", "a quick brown fox jumps", "noise"]
    assert rescorer.wer(refs, hyps) == pytest.approx(100 * jiwer.wer(refs, hyps))  # percent, as the reports
    assert rescorer.wer([""], ["x y"]) == 100 * jiwer.wer([""], ["x y"]) == 200  # jiwer 4: all-empty refs → insertions
    assert rescorer.bleu(refs[:2], hyps[:2]) == pytest.approx(sacrebleu.corpus_bleu(hyps[:2], [refs[:2]]).score)


@pytest.mark.slow
def test_moses_bleu_matches_sacrebleu():
    root = need(MOSES)
    nbest = rescorer.read_nbest(root / "nbest.out", refs=root / "reference.txt")
    metric = BLEUMetric(lowercase=True, tokenize="none", force=True)
    stats = NBestStats.compute(nbest, metric)
    for ranks in (stats.baseline_ranks(), stats.oracle_ranks()):
        direct = sacrebleu.corpus_bleu(nbest.select(ranks), [nbest.refs()], lowercase=True, tokenize="none", force=True)
        assert stats.score(ranks) == pytest.approx(direct.score, abs=1e-9)
    assert stats.score(stats.oracle_ranks()) > stats.score(stats.baseline_ranks())
    assert metric.signature == "nrefs:1|case:lc|eff:no|tok:none|smooth:exp|version:" + sacrebleu.__version__


@pytest.mark.slow
def test_bleu_oracle_beats_every_single_swap():
    """The greedy corpus oracle is a local optimum: no one-utterance change raises corpus BLEU."""
    root = need(MOSES)
    nbest = rescorer.read_nbest(root / "nbest.out", refs=root / "reference.txt")
    stats = NBestStats.compute(nbest, BLEUMetric(force=True))
    ranks = stats.oracle_ranks()
    best = stats.score(ranks)
    rng = np.random.default_rng(1)
    for u in rng.choice(len(ranks), 10, replace=False):
        for k in range(stats.lengths[u]):
            trial = ranks.copy()
            trial[u] = k
            assert stats.score(trial) <= best + 1e-9


@pytest.mark.parametrize("smooth", ["exp", "floor", "add-k", "none"])
def test_vectorised_bleu_equals_sacrebleu_compute_bleu(smooth):
    metric = BLEUMetric(smooth_method=smooth)
    rng = np.random.default_rng(2)
    for _ in range(300):
        total = rng.integers(0, 30, 4)
        total = np.sort(total)[::-1]
        correct = np.minimum(rng.integers(0, 30, 4), total)
        sys_len, ref_len = int(total[0]), int(rng.integers(0, 40))
        stats = np.array([sys_len, ref_len, *correct, *total])
        expected = BLEU.compute_bleu(list(correct), list(total), sys_len, ref_len, smooth_method=smooth,
                                     smooth_value=None).score
        assert float(metric.from_stats(stats)) == pytest.approx(expected, abs=1e-9)


def test_each_metric_knows_its_scale_units_and_direction():
    wer, bleu = WER(), BLEUMetric()
    assert (wer.scale, wer.units, wer.label, wer.higher_is_better) == (100.0, "percent", "WER (%)", False)
    assert (bleu.scale, bleu.units, bleu.label, bleu.higher_is_better) == (1.0, "BLEU (0-100)", "BLEU", True)
    refs, hyps = ["a b c d"], ["a b x d"]
    assert wer.scale * float(wer.from_stats(wer.segment_stats(refs, hyps).sum(0))) == pytest.approx(25.0)


def test_bleu_says_before_scoring_when_case_or_tokenisation_differ_and_which_option_fixes_it(tmp_path, caplog):
    """Lowercased, tokenised output against cased, detokenised references: two one-line warnings naming the fix;
    with lowercase=true the BLEU equals sacrebleu's on the lowercased texts, and the case warning is gone."""
    import json as jsonlib

    from rescorer.metrics import make_metric

    refs = ["The house is big, he said.", "It's Paris again!", "We don't know."]
    hyps = [["the house is big , he said .", "the house is large , he said ."],
            ["it &apos;s paris again !", "it is paris again !"], ["we do n't know .", "we don 't know ."]]
    path = tmp_path / "mt.jsonl"
    path.write_text("".join(jsonlib.dumps({"id": str(k), "ref": ref, "hyps": [
        {"text": text, "scores": {"score": -float(j)}} for j, text in enumerate(options)]}) + "\n"
        for k, (ref, options) in enumerate(zip(refs, hyps))))
    result = rescorer.rescore(sets={"dev": str(path)}, metric="bleu", columns={}, bootstrap=10)
    said = [r.getMessage() for r in caplog.records if r.name == "rescorer" and r.levelname == "WARNING"]
    assert any("all lowercase but the references are not" in s and "data.metric.lowercase=true" in s for s in said)
    assert any("look tokenised" in s and "detokenise the hypotheses" in s for s in said)
    assert result.report.warnings[:2] == [s.removeprefix("rescorer: warning: ") for s in said[:2]]
    caplog.clear()
    lowered = rescorer.rescore(sets={"dev": str(path)}, metric=make_metric("bleu", lowercase=True), columns={},
                               bootstrap=10)
    firsts = [options[0] for options in hyps]
    assert lowered.report.sets["dev"].baseline["bleu"] == pytest.approx(
        sacrebleu.corpus_bleu(firsts, [refs], lowercase=True).score)
    assert not any("lowercase" in r.getMessage() for r in caplog.records)


@pytest.mark.slow
def test_moses_output_given_as_own_data_is_scored_lowercased_by_default_as_sacrebleu_does(tmp_path):
    """The Moses excerpt (lower-cased, tokenised output; cased references) as ``data=own``: BLEU compares without
    case by default, says so in one line, and equals sacrebleu on the lower-cased files; the option turns it off."""
    import json as jsonlib

    from .test_validation import run_cli

    root = need(MOSES)
    own = ["task=evaluate", "data=own", f"data.sets.dev.nbest={root / 'nbest.out'}",
           f"data.sets.dev.refs={root / 'reference.txt'}", "~data.sets.test"]
    result = run_cli(*own, f"out_dir={tmp_path / 'lc'}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "BLEU with lowercase=true, force=true, as moses output is conventionally lower-cased" in result.stdout
    assert "forgot to detokenize" not in result.stdout + result.stderr
    nbest = rescorer.read_nbest(root / "nbest.out", refs=root / "reference.txt")
    firsts, refs = nbest.select([0] * len(nbest)), nbest.refs()
    assert refs != [r.lower() for r in refs] and firsts == [h.lower() for h in firsts]  # the mismatch is real
    report = jsonlib.loads((tmp_path / "lc" / "report.json").read_text())
    assert report["sets"]["dev"]["baseline"]["bleu"] == pytest.approx(
        sacrebleu.corpus_bleu(firsts, [refs], lowercase=True).score, abs=1e-9)
    cased = run_cli(*own, "+data.metric.lowercase=false", f"out_dir={tmp_path / 'cased'}", cwd=tmp_path)
    report = jsonlib.loads((tmp_path / "cased" / "report.json").read_text())
    assert report["sets"]["dev"]["baseline"]["bleu"] == pytest.approx(
        sacrebleu.corpus_bleu(firsts, [refs], force=True).score, abs=1e-9)
    assert "all lowercase but the references are not" in cased.stderr and "lowercase=true," not in cased.stdout


def test_displayed_differences_are_the_ones_the_metric_counts():
    """Under a lower-cased, 13a-tokenised BLEU, case and punctuation spacing are no difference in the marks; WER
    (case-sensitive by default) still marks case."""
    from rescorer.changes import changed, marked, metric_view
    from rescorer.metrics import make_metric

    bleu = make_metric("bleu", lowercase=True)
    ref, before, after = "Europe is big, he said.", "europe is large , he said .", "europe is big , he said ."
    (change,) = changed(["s1"], [before], [after], [ref], bleu)
    assert change.view == metric_view(bleu) == "lowercase+tokenize:13a"
    assert marked(ref, after, 2, change.view) == "= reference"
    assert marked(ref, before, None, change.view) == "europe is [big→large] , he said ."
    assert marked(ref, before).startswith("[Europe→europe] is ")  # as written: case and spacing differ too
    (cased,) = changed(["s1"], [before], [after], [ref], make_metric("bleu"))
    assert marked(ref, after, 2, cased.view) == "[Europe→europe] is big …"
