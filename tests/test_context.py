"""Scoring a hypothesis after the utterances before it: recordings from ids, contexts from the first pass, causal
LL of only the hypothesis's tokens (checked against a direct forward pass over the joined text)."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import rescorer
from rescorer.context import SEPARATOR, Context, conditional, contexts, groups, previous
from rescorer.errors import ConfigError
from rescorer.io.sets import NBestSet

from .conftest import DEMO, needs_minilm

PAIRS = [("HE HOPED THERE WOULD BE STEW FOR DINNER", "TURNIPS AND CARROTS"), ("", "STUFF IT INTO YOU"),
         ("AFTER EARLY NIGHTFALL", ""), ("A B", "THE YELLOW LAMPS WOULD LIGHT UP")]


def demo(name: str, every: int = 1, top: int = 4) -> rescorer.NBest:
    return NBestSet(str(DEMO / name), refs=str(DEMO / name / "ref.trn"), every=every, top=top).read()


def naive(scorer: rescorer.engine.BoundScorer, context: str, hypothesis: str, keep: int | None = None) -> float:
    """log P(hypothesis tokens, EOS | BOS, context) from one forward pass over ``context hypothesis``; the context
    tokens are those that end inside the context, of which the last ``keep`` are read."""
    adapter = adapter_of(scorer)
    tokenizer, model = adapter.tokenizer, adapter.model
    joined = f"{context} {hypothesis}" if context and hypothesis else context or hypothesis
    encoded = tokenizer(joined, add_special_tokens=False, return_offsets_mapping=True)
    given = sum(end <= len(context) for _, end in encoded["offset_mapping"]) if context else 0
    keep = given if keep is None else keep
    ids = [adapter.bos_id, *encoded["input_ids"][given - keep :], tokenizer.eos_token_id]
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].double(), dim=-1)
    return sum(logp[j, ids[j + 1]].item() for j in range(keep, len(ids) - 1))


def adapter_of(scorer):
    return scorer.adapter


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_ll_with_context_scores_only_the_hypothesis_as_a_direct_forward_pass_does(tiny_models, arch, tmp_path):
    scorer = rescorer.load_scorer("ll", str(tiny_models[arch]), context={"utterances": 3, "tokens": 64},
                                  store=str(tmp_path / "s.sqlite"), progress=False)
    texts = [conditional(c, h) for c, h in PAIRS]
    scored = scorer.compute(texts, normalise=False)
    for (context, hypothesis), total, tokens in zip(PAIRS, scored.totals, scored.tokens):
        assert total == pytest.approx(naive(scorer, context, hypothesis), abs=1e-4)
        alone = adapter_of(scorer).tokenizer(hypothesis, add_special_tokens=False)["input_ids"]
        assert len(tokens) == len(alone) + 1  # the hypothesis's tokens and EOS, never the context's
    # Batch budget and order of the texts change nothing; the store gives back what was computed.
    again = rescorer.load_scorer("ll", str(tiny_models[arch]), context={"utterances": 3, "tokens": 64},
                                 budget=16, progress=False).compute(texts[::-1], normalise=False)
    assert again.totals[::-1] == pytest.approx(scored.totals, abs=1e-5)
    assert scorer.compute(texts, normalise=False).totals == scored.totals


def test_an_empty_context_scores_as_the_sentence_alone_and_context_changes_the_score(tiny_models):
    options = {"store": None, "progress": False}
    alone = rescorer.load_scorer("ll", str(tiny_models["gpt2"]), **options)
    with_context = rescorer.load_scorer("ll", str(tiny_models["gpt2"]), context={"utterances": 1}, **options)
    assert with_context.signature != alone.signature and "context:1/256/first_pass" in with_context.signature
    hypothesis = "STUFF IT INTO YOU"
    empty, given = with_context.compute([conditional("", hypothesis), conditional("HE HOPED", hypothesis)],
                                        normalise=False).totals
    assert empty == pytest.approx(alone.score([hypothesis])[0], abs=1e-5)
    assert given != pytest.approx(empty, abs=1e-3)


def test_a_context_longer_than_the_model_reads_is_cut_from_the_left(tiny_models):
    scorer = rescorer.load_scorer("ll", str(tiny_models["gpt2"]), context={"utterances": 1, "tokens": 1000},
                                  window=24, store=None, progress=False)
    context, hypothesis = " ".join(["AND THE YELLOW LAMPS WOULD LIGHT UP"] * 6), "STUFF IT INTO YOU"
    alone = len(adapter_of(scorer).tokenizer(hypothesis, add_special_tokens=False)["input_ids"])
    total = scorer.compute([conditional(context, hypothesis)], normalise=False).totals[0]
    assert total == pytest.approx(naive(scorer, context, hypothesis, keep=24 - 2 - alone), abs=1e-4)
    assert adapter_of(scorer).contexts_cut == 1
    assert adapter_of(scorer).contexts_cut_in([conditional(context, hypothesis)] * 2) == 1  # counted again, once


def test_the_report_counts_cut_contexts_alike_when_the_scores_come_from_the_store(tiny_models, tmp_path):
    dev = demo("dev_other", every=10)
    scorers = {"ll_ctx": {"kind": "ll", "model": str(tiny_models["gpt2"]), "window": 48,
                          "context": {"utterances": 3}}}
    engine = {"store": str(tmp_path / "s.sqlite"), "progress": False}
    notes = [rescorer.rescore(dev=dev, scorers=scorers, bootstrap=10, engine=engine).report.notes for _ in "ab"]
    assert notes[0] == notes[1] and re.search(r"; [1-9]\d* contexts were cut further", notes[0][-1])


def test_recordings_come_from_ids_a_regex_or_the_order_of_a_translation_list():
    nbest = demo("test_clean", every=50)
    assert groups(nbest) == [u.id.rsplit("-", 1)[0] for u in nbest]
    assert groups(nbest, r"^(\d+)-") == [u.id.split("-")[0] for u in nbest]  # by speaker
    moses = nbest.with_utterances(list(nbest))
    object.__setattr__(moses, "fmt", "moses")
    assert groups(moses) == [""] * len(nbest)
    converted = nbest.with_utterances([rescorer.Utterance(str(i), u.hyps, u.ref) for i, u in enumerate(nbest)])
    object.__setattr__(converted, "meta", {"native_fmt": "moses"})  # canonical JSONL converted from Moses
    assert groups(converted) == [""] * len(nbest)
    with pytest.raises(ConfigError, match=r"context.group='\^x' does not match utterance id '1089-134686-0000'"):
        groups(nbest, "^x")
    loose = nbest.with_utterances([rescorer.Utterance("utt7", u.hyps, u.ref) for u in nbest][:1])
    with pytest.raises(ConfigError, match="utterance id 'utt7' names no recording"):
        groups(loose)


def test_each_utterance_reads_the_first_pass_1_bests_before_it_in_its_recording():
    assert previous(list("abcde"), ["x", "x", "y", "x", "y"], 2) == [[], ["a"], [], ["a", "b"], ["c"]]
    nbest = demo("test_clean", every=10)
    found = contexts(nbest, Context(utterances=2), str.lower)
    by_id = {u.id: i for i, u in enumerate(nbest)}
    for i, utt in enumerate(nbest):  # a hand count: the two utterances before it in the list, same chapter
        same = [u for u in list(nbest)[:i] if u.id.rsplit("-", 1)[0] == utt.id.rsplit("-", 1)[0]][-2:]
        assert found[by_id[utt.id]] == " ".join(u.hyps[0].text.lower() for u in same if u.hyps[0].text)
    refs = contexts(nbest, Context(utterances=1, source="reference"), str.lower)
    assert refs[1] == (nbest.utterances[0].ref.lower() if groups(nbest)[0] == groups(nbest)[1] else "")
    with pytest.raises(ConfigError, match="U\\+E000"):
        conditional("", f"A{SEPARATOR}B")


def test_rescoring_with_a_context_column_beside_the_plain_one(tiny_models, tmp_path):
    dev, test = demo("dev_other", every=10), demo("test_clean", every=10)
    model = str(tiny_models["gpt2"])
    scorers = {"ll": {"kind": "ll", "model": model}, "ll_ctx": {"kind": "ll", "model": model,
                                                                 "context": {"utterances": 2}}}
    result = rescorer.rescore(dev=dev, sets={"test": test}, scorers=scorers, bootstrap=20, out_dir=tmp_path / "out",
                              engine={"store": str(tmp_path / "s.sqlite"), "progress": False})
    columns = result.nbests["test"]
    first = set()  # utterances that open their chapter: nothing before them, so both columns agree
    for group in dict.fromkeys(groups(test)):
        first.add(groups(test).index(group))
    for u, utt in enumerate(columns):
        for hyp in utt.hyps:
            if u in first:
                assert hyp.scores["ll_ctx"] == pytest.approx(hyp.scores["ll"], abs=1e-5)
    assert any(h.scores["ll_ctx"] != pytest.approx(h.scores["ll"], abs=1e-3)
               for u, utt in enumerate(columns) if u not in first for h in utt.hyps)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert "context:2/256/first_pass" in report["scorers"]["ll_ctx"] and "context" not in report["scorers"]["ll"]
    assert any(note.startswith("ll_ctx reads each hypothesis after the first_pass 1-bests of up to 2")
               for note in report["notes"])
    from rescorer.pipeline.results import context_labels

    assert context_labels(result.tuned.loaded) == {"ll_ctx": "ll_ctx (previous 2 utterances)"}
    assert (tmp_path / "out" / "weights_dev.png").is_file()
    with pytest.raises(ConfigError, match="context.source=reference"):
        rescorer.rescore(dev=dev, scorers={"ll": {**scorers["ll_ctx"], "context": {"source": "reference"}}},
                         engine={"store": None, "progress": False})


def test_rescored_context_reranks_each_recording_in_order_as_a_naive_loop(tiny_models, tmp_path):
    dev, test = demo("dev_other", every=10), demo("test_clean", every=10)
    spec = {"kind": "ll", "model": str(tiny_models["gpt2"]), "context": {"utterances": 2, "source": "rescored"}}
    result = rescorer.rescore(dev=dev, sets={"test": test}, scorers={"ll_ctx": spec}, bootstrap=20,
                              columns={"ll_ctx": {"range": [1, 1], "step": 0.1, "penalty": "none"}},
                              engine={"store": str(tmp_path / "s.sqlite"), "progress": False})
    scorer = rescorer.load_scorer(**spec, store=None, progress=False)
    norm = adapter_of(scorer).normaliser
    chosen: list[str] = []  # the naive loop: utterance by utterance, each after the 1-bests chosen before it
    for u, (utt, group) in enumerate(zip(test, groups(test))):
        before = [chosen[v] for v in range(u) if groups(test)[v] == group][-2:]
        context = " ".join(norm(text) for text in before if norm(text))
        lm = scorer.compute([conditional(context, norm(h.text)) for h in utt.hyps], normalise=False).totals
        totals = [h.scores["score"] + value for h, value in zip(utt.hyps, lm)]
        chosen.append(utt.hyps[int(np.argmax(totals))].text)
        column = {h.text: h.scores["ll_ctx"] for h in result.nbests["test"].utterances[u].hyps}
        assert [column[h.text] for h in utt.hyps] == pytest.approx(lm, abs=1e-5)  # scored after those 1-bests
    rescored = result.nbests["test"]
    assert [utt.hyps[0].text for utt in rescored] == chosen
    first_pass = [utt.hyps[0].text for utt in test]
    assert chosen != first_pass  # some contexts differ from the input 1-bests: the order mattered
    assert any("re-ranked in order" in note for note in result.report.notes)
    applied = rescorer.apply(test, result.tuned, engine={"store": str(tmp_path / "s.sqlite"), "progress": False},
                             bootstrap=20)
    assert [utt.hyps[0].text for utt in applied.nbests["test"]] == chosen
    first_pass = rescorer.load_scorer(**{**spec, "context": {"utterances": 2}}, store=None)
    assert adapter_of(scorer).store_key == first_pass.signature != scorer.signature  # they share stored scores
    with pytest.raises(ConfigError, match="that needs weights, so use task=rescore or task=apply"):
        rescorer.pipeline.scoring.check_contexts({"test": test}, {"ll_ctx": scorer}, tuning=False)  # task=score
    with pytest.raises(ConfigError, match="context.source=rescored reads the utterances before"):
        rescorer.load_scorer("ll", str(tiny_models["gpt2"]), context={"source": "rescored", "following": 1})


@pytest.mark.slow
@pytest.mark.parametrize("override, words", [
    ("scorer.ll_ctx.context.utterance=3", "unknown scorer.ll_ctx.context key 'utterance', did you mean 'utterances'"),
    ("scorer.ll_ctx.context.group='^nothing'", "context.group='^nothing' does not match utterance id"),
    ("scorer.ll_ctx.context.source=rescoerd", "unknown context.source 'rescoerd', did you mean 'rescored'"),
])
def test_context_mistakes_are_one_line(tiny_models, tmp_path, override, words):
    run = subprocess.run([sys.executable, "-m", "rescorer", "task=rescore", "scorer=[ll_ctx]",
                          f"model.causal.path={tiny_models['gpt2']}", "+data.sets.dev_other.every=30",
                          "+data.sets.test_clean.every=30", override, f"out_dir={tmp_path / 'out'}",
                          f"engine.store={tmp_path / 's.sqlite'}"], capture_output=True, text=True, timeout=300)
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2 and len(lines) == 1 and words in lines[0], run.stderr
    assert not (tmp_path / "out").exists()


def test_a_prefix_tree_holds_each_shared_beginning_once():
    from rescorer.scorers.prefix import ancestors, plant

    sentences = [np.array(s) for s in ([1, 5, 6, 7, 8], [1, 5, 6, 9], [1, 5, 6, 7, 8, 2], [1, 3])]
    forest = plant(sentences, np.array([0, 2, 0, 0]), limit=7)
    # Tree 1: 1 5 6 7 8 | 9 | 2 (7 nodes); the fourth sentence would make 8 nodes: a tree of its own.
    assert forest.nodes.tolist() == [7, 2] and forest.span.tolist() == [3, 1] and forest.sentence.tolist() == [0, 3]
    assert forest.token[:7].tolist() == [1, 5, 6, 7, 8, 9, 2] and forest.parent[:7].tolist() == [-1, 0, 1, 2, 3, 2, 4]
    assert forest.depth[:7].tolist() == [0, 1, 2, 3, 4, 3, 5]
    # Targets: 4 of the first, 1 of the second (its first two ids after BOS are context), 5 of the third.
    assert forest.targets.tolist() == [10, 1] and forest.target_token[:5].tolist() == [5, 6, 7, 8, 9]
    assert forest.target_node[:5].tolist() == [0, 1, 2, 3, 2]
    seen = ancestors(forest.parent[None, :7])[0]
    assert seen[5].nonzero()[0].tolist() == [0, 1, 2, 5] and seen[6].nonzero()[0].tolist() == [0, 1, 2, 3, 4, 6]


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
@pytest.mark.parametrize("with_context", [False, True])
def test_shared_prefixes_score_as_every_row_in_full_and_read_fewer_tokens(tiny_models, arch, with_context):
    nbest = demo("dev_other", every=15, top=10)
    options = {"context": {"utterances": 3}} if with_context else {}
    shared, unshared = (rescorer.load_scorer("ll", str(tiny_models[arch]), share_prefixes=flag, store=None,
                                             progress=False, **options) for flag in (True, False))
    texts = rescorer.pipeline.scoring.scored_texts(nbest, shared)
    a, b = shared.compute(texts, normalise=False), unshared.compute(texts, normalise=False)
    assert np.allclose(a.totals, b.totals, atol=1e-5, rtol=0)
    assert all(np.allclose(x, y, atol=1e-5, rtol=0) for x, y in zip(a.tokens, b.tokens))
    pools = [s.adapter.pool(s.adapter.prepare_all(list(dict.fromkeys(texts)))) for s in (shared, unshared)]
    assert pools[0].length.sum() < 0.8 * pools[1].length.sum()  # fewer model tokens for the same scores


def naive_pll(scorer, context: str, hypothesis: str, following: str = "") -> float:
    """PLL (word_l2r) of the hypothesis's tokens in ``[CLS] context hypothesis following [SEP]``, masking by hand:
    each token and the rest of its word hidden, the contexts always visible."""
    adapter = adapter_of(scorer)
    tokenizer, model = adapter.tokenizer, adapter.model
    joined = " ".join(part for part in (context, hypothesis, following) if part)
    begin = len(context) + 1 if context else 0
    encoded = tokenizer(joined, return_offsets_mapping=True, return_special_tokens_mask=True)
    ids, words = encoded["input_ids"], encoded.word_ids()
    scored = [p for p, (special, (start, end)) in enumerate(zip(encoded["special_tokens_mask"],
                                                                 encoded["offset_mapping"]))
              if not special and start >= begin and end <= begin + len(hypothesis) and hypothesis]
    total = 0.0
    for p in scored:
        copy = list(ids)
        for q in scored:
            if q >= p and words[q] == words[p]:
                copy[q] = tokenizer.mask_token_id
        with torch.no_grad():
            logits = model(torch.tensor([copy])).logits[0, p].double()
        total += torch.log_softmax(logits, dim=-1)[ids[p]].item()
    return total


@pytest.fixture(scope="module")
def sharp_masked(tmp_path_factory) -> dict[str, Path]:
    """Tiny random masked LMs whose predictions depend clearly on the other tokens (a default tiny model's
    context effect ranges from about 1e-3 down to 2e-5 with its freshly trained tokenizer)."""
    from rescorer.devtools import build_model

    from .models import demo_texts

    root = tmp_path_factory.mktemp("sharp")
    return {arch: build_model(arch, "tiny", demo_texts(), root / arch, vocab_size=800, initializer_range=0.2)
            for arch in ("bert", "roberta")}


@pytest.mark.parametrize("arch", ["bert", "roberta"])
def test_pll_with_context_masks_only_the_hypothesis_as_a_naive_masked_loop(sharp_masked, arch):
    scorer = rescorer.load_scorer("pll", str(sharp_masked[arch]), variant="word_l2r", context={"utterances": 2},
                                  store=None, progress=False)
    scored = scorer.compute([conditional(c, h) for c, h in PAIRS], normalise=False)
    for (context, hypothesis), total in zip(PAIRS, scored.totals):
        assert total == pytest.approx(naive_pll(scorer, context, hypothesis) if hypothesis else float("-inf"),
                                      abs=1e-4)
    alone = rescorer.load_scorer("pll", str(sharp_masked[arch]), variant="word_l2r", store=None, progress=False)
    assert scorer.compute([conditional("", "STUFF IT INTO YOU")], normalise=False).totals[0] == pytest.approx(
        alone.score(["STUFF IT INTO YOU"])[0], abs=1e-5)
    assert abs(scored.totals[0] - alone.score([PAIRS[0][1]])[0]) > 1e-2  # the left side is read


@pytest.mark.parametrize("arch", ["bert", "roberta"])
def test_pll_reads_the_following_utterances_to_the_right_as_a_naive_masked_loop(sharp_masked, arch):
    scorer = rescorer.load_scorer("pll", str(sharp_masked[arch]), variant="word_l2r",
                                  context={"utterances": 2, "following": 1}, store=None, progress=False)
    triples = [(c, h, f) for (c, h), (_, f) in zip(PAIRS, PAIRS[1:] + PAIRS[:1])] + [("", "TURNIPS", "")]
    scored = scorer.compute([conditional(c, h, f) for c, h, f in triples], normalise=False)
    for (context, hypothesis, following), total in zip(triples, scored.totals):
        expected = naive_pll(scorer, context, hypothesis, following) if hypothesis else float("-inf")
        assert total == pytest.approx(expected, abs=1e-4)
    assert abs(scored.totals[0] - naive_pll(scorer, *PAIRS[0])) > 1e-2  # the right side is read (noise ~1e-6)


def test_the_following_utterances_are_the_1_bests_after_each_in_its_recording():
    nbest = demo("test_clean", every=10)
    after = contexts(nbest, Context(utterances=1), str.lower, -2)
    for i, utt in enumerate(nbest):  # a hand count: the two utterances after it in the list, same chapter
        same = [u for u in list(nbest)[i + 1 :] if u.id.rsplit("-", 1)[0] == utt.id.rsplit("-", 1)[0]][:2]
        assert after[i] == " ".join(u.hyps[0].text.lower() for u in same if u.hyps[0].text)
    assert Context(following=2).signature == "5/256/first_pass/+2" and Context().signature == "5/256/first_pass"


def test_a_causal_scorer_refuses_the_utterances_after_the_hypothesis(tiny_models):
    with pytest.raises(ConfigError, match="context.following=1: a ll scorer reads only what comes before"):
        rescorer.load_scorer("ll", str(tiny_models["gpt2"]), context={"following": 1}, store=None)


@needs_minilm
def test_a_scorer_that_reads_no_context_refuses_the_option():
    with pytest.raises(ConfigError, match="the student learnt with no context; leave context unset"):
        rescorer.load_scorer("student", rescorer.shipped.student("student_mse"), context={"utterances": 2})
