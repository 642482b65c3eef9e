"""Minimal pairs: readers, exact template and prompt strings, every method's accuracy against a naive loop over
the pairs, Yes/No against a plain softmax, A/B balance, ensemble votes, and the PLL desiderata against scipy."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.stats import pearsonr
from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

from rescorer import load_scorer
from rescorer.errors import ConfigError, DataFormatError
from rescorer.pairs import (
    Judge,
    Judgments,
    PairSet,
    ensemble,
    majority,
    parse_ensemble,
    read_pairs,
    read_sentences,
)
from rescorer.pairs.desiderata import (
    DesiderataScores,
    correlations,
    log_frequencies,
    multi_token_share,
    word_scores,
    words_of,
)
from rescorer.pairs.accuracy import pearson, summarise
from rescorer.pairs.methods import (
    AB_PROMPTS,
    COMPARATIVE_TEMPLATES,
    SINGLE_TEMPLATES,
    YES_NO_PROMPTS,
    ab_order,
    answers,
    fill,
    render,
)

from .conftest import ROOT, SHARED, need

BLIMP = ROOT / "tests" / "fixtures" / "pairs" / "blimp"
GIRLS = "Many girls insulted themselves."
HERSELF = "Many girls insulted herself."
# SmolLM2's chat template (ChatML), as `tokenizer.chat_template` holds it.
CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
          "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")


def training_texts() -> list[str]:
    """Texts for the tiny models' tokenizers: the fixture's sentences inside every template and prompt, and the
    answers on their own (so that "Yes", " Yes", "A", " A" … are single tokens)."""
    pairs = read_pairs(BLIMP)
    sentences = [s for p in pairs for s in (p.good, p.bad)]
    texts = [fill(t, sentence=s) for t in SINGLE_TEMPLATES for s in sentences]
    texts += [fill(t, sentence=p.good, other=p.bad) for t in COMPARATIVE_TEMPLATES for p in pairs]
    texts += [render(q, "base", sentence=s) for q in YES_NO_PROMPTS for s in sentences]
    texts += [render(q, "base", a=p.good, b=p.bad) for q in AB_PROMPTS for p in pairs]
    return texts + ["Yes", "No", "A", "B", "Answer: Yes", "Answer: No", "Answer: A", "Answer: B"] * 40


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny models run fastest on one thread (no hand-off between threads on a busy 2-core machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict[str, Path]:
    """A tiny random GPT-2 (with a ChatML chat template), Llama and BERT, tokenizers trained on ``training_texts``."""
    from rescorer.devtools import build_model

    root = tmp_path_factory.mktemp("pair-models")
    texts = training_texts()
    gpt2 = build_model("gpt2", "tiny", texts, root / "gpt2", vocab_size=1000)
    tok = AutoTokenizer.from_pretrained(gpt2)
    tok.chat_template = CHATML
    tok.save_pretrained(gpt2)
    for word in ("Yes", " Yes", "No", " No", "A", " A", "B", " B"):
        assert len(tok(word, add_special_tokens=False)["input_ids"]) == 1, word
    return {"gpt2": gpt2, "llama": build_model("llama", "tiny", texts, root / "llama", vocab_size=1000),
            "bert": build_model("bert", "tiny", texts, root / "bert", vocab_size=1000)}


# ---- readers
def test_blimp_directory_reads_every_paradigm_with_its_phenomenon():
    pairs = read_pairs(BLIMP)
    assert len(pairs) == 12
    assert [p.paradigm for p in pairs[::4]] == ["adjunct_island", "anaphor_gender_agreement",
                                                "determiner_noun_agreement_1"]
    assert [p.phenomenon for p in pairs[::4]] == ["island_effects", "anaphor_agreement", "determiner_noun_agreement"]
    first = pairs[0]
    assert (first.good, first.bad) == ("Who should Derek hug after shocking Richard?",
                                       "Who should Derek hug Richard after shocking?")
    assert first.where == f"{BLIMP / 'adjunct_island.jsonl'}:1"
    assert len(read_pairs(BLIMP, limit=1)) == 3
    assert {p.phenomenon for p in read_pairs(BLIMP, group="field")} == {"syntax", "morphology"}
    assert PairSet("x", str(BLIMP), limit=2).read() == [p for p in pairs if p.where.endswith((":1", ":2"))]


def test_rows_pair_consecutive_sentences_by_label(tmp_path):
    climp = tmp_path / "anaphor_agreement_gender_1000.csv"
    climp.write_text(",paradigm,sentence,label\n0,anaphor,王玉珍震惊了她自己,1\n1,anaphor,王玉珍震惊了他自己,0\n"
                     "2,anaphor,他们喜欢自己,0\n3,anaphor,他喜欢自己,1\n", encoding="utf-8")
    pairs = read_pairs(climp, "climp")
    assert [(p.good, p.bad) for p in pairs] == [("王玉珍震惊了她自己", "王玉珍震惊了他自己"), ("他喜欢自己", "他们喜欢自己")]
    assert {p.paradigm for p in pairs} == {"anaphor_agreement_gender_1000"} and pairs[1].where.endswith(":4")
    events = tmp_path / "events.csv"
    events.write_text('"ItemNum","Sentence","Plausibility","TrialType"\n"1","The raider caught the illness.",'
                      '"Plausible","AI"\n"1","The illness caught the raider.","Implausible","AI"\n')
    (pair,) = read_pairs(events, "rows", sentence="Sentence", label="Plausibility", good_label="Plausible",
                         group="TrialType")
    assert (pair.good, pair.bad, pair.phenomenon) == ("The raider caught the illness.",
                                                      "The illness caught the raider.", "AI")


def test_columns_read_csv_tsv_and_jsonl(tmp_path):
    (tmp_path / "a.csv").write_text("ok,nope,kind\nCats sleep.,Cats sleeps.,agreement\n")
    (tmp_path / "b.tsv").write_text("ok\tnope\tkind\nDogs bark.\tDogs barks.\tagreement\n")
    (tmp_path / "c.jsonl").write_text(json.dumps({"ok": "I ran.", "nope": "I runned.", "kind": "irregular"}) + "\n\n")
    pairs = read_pairs(tmp_path, "columns", good="ok", bad="nope", group="kind")
    assert [(p.good, p.bad, p.phenomenon, p.paradigm) for p in pairs] == [
        ("Cats sleep.", "Cats sleeps.", "agreement", "a"), ("Dogs bark.", "Dogs barks.", "agreement", "b"),
        ("I ran.", "I runned.", "irregular", "c")]
    assert read_sentences(tmp_path / "a.csv", "ok") == ["Cats sleep."]


@pytest.mark.parametrize("name, text, options, message", [
    ("p.jsonl", '{"sentence_good": "A b.", "linguistics_term": "x"}\n', {"fmt": "blimp"},
     "p.jsonl:1: missing bad column 'sentence_bad' (columns: sentence_good, linguistics_term)"),
    ("p.jsonl", '{"sentence_good": "A b.", "sentence_bad": "B a.", "linguistics_term": "x", "UID": "y"}\n[1]\n',
     {"fmt": "blimp"},
     "p.jsonl:2: expected a JSON object: '[1]'"),
    ("p.csv", "good,bad\nA b.,B a.\nC d.\n", {"fmt": "columns"}, "p.csv:3: 1 fields, but the header has 2: ['C d.']"),
    ("p.csv", "ok,bad\nA b.,B a.\n", {"fmt": "columns"}, "p.csv:2: missing good column 'good' (columns: ok, bad)"),
    ("p.csv", "good,bad\n ,B a.\n", {"fmt": "columns"}, "p.csv:2: good sentence is empty or not text: ' '"),
    ("p.csv", "sentence,label\nA b.,1\nB a.,1\n", {"fmt": "rows"},
     "p.csv:3: rows 2 and 3 are not one acceptable ('1') and one unacceptable sentence: labels: ['1', '1']"),
    ("p.csv", "sentence,label\nA b.,1\nB a.,0\nC d.,1\n", {"fmt": "rows"},
     "p.csv:4: odd number of rows: the last one has no partner"),
    ("p.csv", "s,l\nA b.,1\nB a.,0\n", {"fmt": "rows", "sentence": 0, "label": 5}, "p.csv:2: no label column at position 5 (the row has 2)"),
    ("p.jsonl", '{"s": "A b.", "l": 1}\n{"s": "B a.", "l": 0}\n', {"fmt": "rows", "sentence": 0, "label": "l"},
     "p.jsonl:1: sentence column must be named in JSONL, not a position: 0"),
])
def test_bad_pair_files_name_the_file_line_and_value(tmp_path, name, text, options, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(DataFormatError) as err:
        read_pairs(path, **options)
    assert str(err.value) == f"{tmp_path}/{message}"


def test_bad_reader_options_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="unknown pair format 'xml'"):
        read_pairs(BLIMP, "xml")
    with pytest.raises(DataFormatError, match="no such file or directory"):
        read_pairs(tmp_path / "missing.jsonl")
    with pytest.raises(DataFormatError, match="directory has no .jsonl files"):
        read_pairs(tmp_path)


# ---- exact strings
def test_templates_and_prompts_are_the_papers_strings():
    assert fill(SINGLE_TEMPLATES[0], sentence=GIRLS) == (
        "The following sentence is grammatically acceptable.\n\nMany girls insulted themselves.")
    assert fill(COMPARATIVE_TEMPLATES[0], sentence=GIRLS, other=HERSELF) == (
        "The following sentence A is grammatically acceptable while B is not.\n\n"
        "A: Many girls insulted themselves.\nB: Many girls insulted herself.")
    assert render(YES_NO_PROMPTS[0], "base", sentence=GIRLS) == (
        "Your task is to evaluate the quality of given text. Is the following sentence grammatically acceptable? "
        "Respond with Yes or No as your answer.\n\nMany girls insulted themselves.\nAnswer:")
    assert render(AB_PROMPTS[0], "base", a=GIRLS, b=HERSELF) == (
        "Your task is to compare the quality of given sentences. One of the following sentences is grammatically "
        "acceptable and the other is not. Which one is acceptable? Respond with A or B as your answer.\n\n"
        "A: Many girls insulted themselves.\nB: Many girls insulted herself.\nAnswer:")
    assert answers(["Yes", "No"], "base") == [" Yes", " No"] and answers(["A", "B"], "chat") == ["A", "B"]
    assert len(SINGLE_TEMPLATES) == len(COMPARATIVE_TEMPLATES) == len(YES_NO_PROMPTS) == len(AB_PROMPTS) == 5
    assert fill("{sentence} / {other}", sentence="a {other} b", other="c") == "a {other} b / c"  # one pass
    with pytest.raises(ConfigError, match="has no {sentence} placeholder"):
        fill("no placeholder", sentence=GIRLS)


def test_chat_prompt_is_the_tokenizers_chat_template(tiny):
    tok = AutoTokenizer.from_pretrained(tiny["gpt2"])
    assert render(YES_NO_PROMPTS[0], "chat", tok, sentence=GIRLS) == (
        "<|im_start|>system\nYour task is to evaluate the quality of given text.<|im_end|>\n"
        "<|im_start|>user\nIs the following sentence grammatically acceptable? Respond with Yes or No as your "
        "answer.\n\nMany girls insulted themselves.<|im_end|>\n<|im_start|>assistant\n")
    tok.chat_template = ("{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('no system') }}"
                         "{% endif %}[{{ m['content'] }}]{% endfor %}")
    assert render(YES_NO_PROMPTS[0], "chat", tok, sentence="X.") == (  # no system role: merged into the user's
        "[Your task is to evaluate the quality of given text. Is the following sentence grammatically acceptable? "
        "Respond with Yes or No as your answer.\n\nX.]")


# ---- every method against a naive loop over the pairs
def naive_ll(model, tok, text: str, eos: bool = False) -> tuple[float, int]:
    """LL of ``text`` after BOS (log P(EOS | text) added with ``eos``), one unbatched forward, and how many tokens
    that sum has: the tokenizer's count of ``text`` (+ 1 for the EOS)."""
    ids = [tok.bos_token_id, *tok(text, add_special_tokens=False)["input_ids"], *([tok.eos_token_id] if eos else [])]
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].double(), -1)
    return sum(logp[i, ids[i + 1]].item() for i in range(len(ids) - 1)), len(ids) - 1


def test_accuracy_of_every_readout_method_equals_a_naive_loop(tiny, tmp_path):
    pairs = read_pairs(BLIMP)
    scorer = load_scorer("ll", str(tiny["gpt2"]), score_eos=False, store=tmp_path / "s.sqlite", progress=False)
    judge = Judge(scorer, pairs)
    tok = AutoTokenizer.from_pretrained(tiny["gpt2"])
    model = AutoModelForCausalLM.from_pretrained(tiny["gpt2"]).eval()
    single = lambda s: [f"The following sentence is grammatically acceptable.\n\n{s}",  # noqa: E731
                        f"Here is a grammatically correct sentence.\n\n{s}",
                        f"The sentence below follows the rules of English grammar.\n\n{s}",
                        f"This is an example of a well-formed English sentence.\n\n{s}",
                        f"A native speaker would accept the following sentence as grammatical.\n\n{s}"]
    measures = {"lp": lambda lp, n: lp, "mean_lp": lambda lp, n: lp / n, "pen_lp": lambda lp, n: lp / ((5 + n) / 6) ** 0.8}
    for name, measure in measures.items():
        for method, texts in ((name, lambda s: [s]), (f"template_{name}", single)):
            got = judge(method)
            want = np.array([[measure(*naive_ll(model, tok, g)) > measure(*naive_ll(model, tok, b))
                              for g, b in zip(texts(p.good), texts(p.bad))] for p in pairs]).T
            np.testing.assert_array_equal(got.correct, want)
            summary = summarise(got, [p.phenomenon for p in pairs], np.zeros(len(pairs)))
            assert summary["accuracy"] == pytest.approx(100 * want.mean(axis=1).mean())
            assert summary["spread"] == pytest.approx(100 * want.mean(axis=1).std())
            island = [i for i, p in enumerate(pairs) if p.phenomenon == "island_effects"]
            assert summary["phenomena"]["island_effects"] == pytest.approx(100 * want[:, island].mean())
    compar = judge("template_compar_lp")
    want = [naive_ll(model, tok, f"Of the two sentences below, A is grammatically correct and B is not.\n\n"
                                 f"A: {p.good}\nB: {p.bad}")[0] >
            naive_ll(model, tok, f"Of the two sentences below, A is grammatically correct and B is not.\n\n"
                                 f"A: {p.bad}\nB: {p.good}")[0] for p in pairs]
    np.testing.assert_array_equal(compar.correct[1], want)
    lengths = judge.token_lengths()
    assert lengths[0, 0] == naive_ll(model, tok, pairs[0].good)[1]


@pytest.mark.parametrize("style", ["base", "chat"])
def test_yes_no_probability_equals_a_softmax_over_the_full_next_token_logits(tiny, style):
    pairs = read_pairs(BLIMP, limit=1)
    scorer = load_scorer("ll", str(tiny["gpt2"]), score_eos=False, progress=False)
    got = Judge(scorer, pairs, style=style)("yes_no")
    tok = AutoTokenizer.from_pretrained(tiny["gpt2"])
    model = AutoModelForCausalLM.from_pretrained(tiny["gpt2"]).eval()
    system = "Your task is to evaluate the quality of given text."
    for k, pair in enumerate(pairs):
        for sentence, scores in ((pair.good, got.good), (pair.bad, got.bad)):
            user = f"Is this sentence grammatically correct? Answer Yes or No.\n\n{sentence}"
            if style == "base":
                ids = [tok.bos_token_id, *tok(f"{system} {user}\nAnswer:", add_special_tokens=False)["input_ids"]]
                yes, no = tok(" Yes")["input_ids"][0], tok(" No")["input_ids"][0]
            else:
                prompt = (f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
                          "<|im_start|>assistant\n")
                ids = tok(prompt, add_special_tokens=False)["input_ids"]
                yes, no = tok("Yes")["input_ids"][0], tok("No")["input_ids"][0]
            with torch.no_grad():
                p = torch.softmax(model(torch.tensor([ids])).logits[0, -1].double(), -1)
            assert scores[1, k] == pytest.approx((p[yes] / (p[yes] + p[no])).item(), abs=1e-6)


def test_next_token_answers_must_be_single_tokens(tiny):
    scorer = load_scorer("ll", str(tiny["gpt2"]), score_eos=False, progress=False)
    with pytest.raises(ConfigError, match="candidate answer 'Perhaps' is .* tokens .* it must be one"):
        scorer.adapter.next_token(["Perhaps", "No"])
    masked = load_scorer("pll", str(tiny["bert"]), progress=False)
    with pytest.raises(ConfigError, match="needs a causal LM"):
        Judge(masked, read_pairs(BLIMP, limit=1))("yes_no")


def test_ab_order_is_balanced_per_group_and_seeded():
    groups = ["a"] * 7 + ["b"] * 6 + ["c"]
    orders = [ab_order(groups, seed) for seed in range(6)]
    for order in orders:
        assert order[:7].sum() in (3, 4) and order[7:13].sum() == 3 and order[13] in (True, False)
    np.testing.assert_array_equal(ab_order(groups, 3), orders[3])
    assert len({o.tobytes() for o in orders}) > 1


def test_ab_shows_the_good_sentence_as_its_letter_and_scores_that_letter(tiny):
    pairs = read_pairs(BLIMP)
    scorer = load_scorer("ll", str(tiny["gpt2"]), score_eos=False, progress=False)
    got = Judge(scorer, pairs, style="base", ab=AB_PROMPTS[:1], seed=7)("ab")
    good_is_a = ab_order([p.paradigm for p in pairs], 7)
    np.testing.assert_array_equal(got.details["good_is_a"], good_is_a)
    shown = [(p.good, p.bad) if first else (p.bad, p.good) for p, first in zip(pairs, good_is_a)]
    prompts = [render(AB_PROMPTS[0], "base", a=a, b=b) for a, b in shown]
    logp = np.array(scorer.view(scorer.adapter.next_token([" A", " B"])).compute(prompts, normalise=False).tokens)
    np.testing.assert_allclose(got.good[0], np.where(good_is_a, logp[:, 0], logp[:, 1]))
    np.testing.assert_array_equal(got.correct[0], (logp[:, 0] > logp[:, 1]) == good_is_a)


# ---- ensembles
def test_majority_vote_on_hand_made_judgments():
    votes = np.array([[1, 0, 1, 1], [1, 1, 0, 0], [0, 1, 0, 1], [1, 0, 0, 1], [0, 0, 1, 0]], dtype=bool)
    np.testing.assert_array_equal(majority(votes), [True, False, False, True])  # 3/5, 2/5, 2/5, 3/5
    assert parse_ensemble("L2:P3") == {"template_lp": 2, "yes_no": 3}
    assert parse_ensemble("L5:P0") == {"template_lp": 5}
    for bad in ("L2:P2", "L2P3", "X1:P2", ""):
        with pytest.raises(ConfigError, match="ensemble"):
            parse_ensemble(bad)


def test_ensemble_follows_the_majority_method():
    # L is right on pair 0 and wrong on pair 1 under all five templates; P the opposite; pair 2: both right.
    lp = Judgments("template_lp", list("12345"), np.array([[True, False, True]] * 5))
    yn = Judgments("yes_no", list("12345"), np.array([[False, True, True]] * 5))
    members = {"template_lp": lp, "yes_no": yn}
    np.testing.assert_array_equal(ensemble("L3:P2", members, trials=4).correct, [[True, False, True]] * 4)
    np.testing.assert_array_equal(ensemble("L2:P3", members, trials=4).correct, [[False, True, True]] * 4)
    mixed = Judgments("template_lp", list("12345"), np.array([[True], [True], [False], [False], [False]]))
    draws = ensemble("L3:P0", {"template_lp": mixed, "yes_no": yn}, trials=200).correct[:, 0]
    assert 0 < draws.mean() < 1  # three of five drawn anew each trial: either majority happens
    with pytest.raises(ConfigError, match="wants 7 template_lp judgments"):
        ensemble("L7:P0", members)


# ---- desiderata
def naive_word_score(model_dir: Path, frame_text: str, start: int, end: int) -> float:
    """PLL-original of the tokens inside [start, end): each masked alone in the frame, the full model run."""
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForMaskedLM.from_pretrained(model_dir).eval()
    enc = tok(frame_text, return_offsets_mapping=True)
    total = 0.0
    for i, (a, b) in enumerate(enc["offset_mapping"]):
        if a < end and b > start and b > a:
            ids = list(enc["input_ids"])
            ids[i] = tok.mask_token_id
            with torch.no_grad():
                logits = model(torch.tensor([ids])).logits[0, i]
            total += torch.log_softmax(logits, -1)[enc["input_ids"][i]].item()
    return total


def test_desiderata_correlations_equal_scipy_and_word_scores_a_naive_loop(tiny):
    sentences = [p.good for p in read_pairs(BLIMP)]
    words = words_of(sentences)
    assert words[:4] == ["who", "should", "derek", "hug"] and len(words) == len(set(words))
    pll = load_scorer("pll", str(tiny["bert"]), variant="original", progress=False)
    ll = load_scorer("ll", str(tiny["gpt2"]), score_eos=False, progress=False)
    scores = DesiderataScores.of(pll, sentences, words)
    for word, got in list(zip(words, scores.words["my_word"]))[:5]:
        text = f"My word is {word}."
        assert got == pytest.approx(naive_word_score(tiny["bert"], text, 11, 11 + len(word)), abs=1e-4)
    np.testing.assert_allclose(scores.words["no_context"], pll.score(words), atol=1e-5)
    log_freq = log_frequencies(words)
    assert log_freq[words.index("who")] > log_freq[words.index("derek")] > 0
    causal = np.array(ll.score(sentences))
    r = correlations(scores, log_freq, causal)
    assert r["length"] == pytest.approx(pearsonr(-np.array(pll.score(sentences)),
                                                 [len(t) for t in pll.token_scores(sentences)])[0])
    for frame in ("my_word", "no_context"):
        assert r["frequency"][frame] == pytest.approx(pearsonr(scores.words[frame], log_freq)[0])
    assert r["causal"] == pytest.approx(pearsonr(pll.score(sentences), causal)[0])
    assert pearson([1, 2, 3], [5, 5, 5]) is None
    tokenizer = pll.adapter.tokenizer
    split = [len(tokenizer(f" {w}", add_special_tokens=False)["input_ids"]) > 1 for w in words]
    assert multi_token_share(tokenizer, words) == pytest.approx(100 * sum(split) / len(words))
    np.testing.assert_allclose(word_scores(ll, ["derek"], "{word}"), ll.score(["derek"]), atol=1e-5)


# ---- tasks
def compose(*overrides: str):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from rescorer.tasks import CONF, register_resolvers

    register_resolvers()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return hydra_compose(config_name="config", overrides=list(overrides))


def test_minimal_pairs_task_writes_tables_records_and_plot(tiny, tmp_path):
    from rescorer.tasks import run_task

    common = [f"pairs.path={BLIMP}", f"engine.store={tmp_path}/s.sqlite", "engine.progress=false"]
    cfg = compose("task=minimal_pairs", "scorer=[ll]", f"model.causal.path={tiny['gpt2']}", *common,
                  "task.methods=[lp,pen_lp,template_lp,yes_no,ab]", "task.ensembles=[L2:P3]", f"out_dir={tmp_path}/ll")
    report = run_task(cfg)
    out = tmp_path / "ll"
    assert set(report["methods"]) == {"ll.lp", "ll.pen_lp", "ll.template_lp", "ll.yes_no", "ll.ab",
                                      "ll.ensemble[L2:P3]"}
    records = [json.loads(line) for line in (out / "pairs.jsonl").read_text().splitlines()]
    assert len(records) == 12 and json.loads((out / "report.json").read_text())["n_pairs"] == 12
    for key, entry in report["methods"].items():
        per_template = np.array([r["methods"][key]["correct"] for r in records]).mean(axis=0) * 100
        assert entry["accuracy"] == pytest.approx(per_template.mean())
        assert set(entry["phenomena"]) == {"island_effects", "anaphor_agreement", "determiner_noun_agreement"}
    assert len(report["methods"]["ll.yes_no"]["templates"]) == 5 and 0 <= report["methods"]["ll.ab"]["answered_a"] <= 100
    assert "ll.ensemble\\[L2:P3\\]" in (out / "report.md").read_text()  # shown literally, not as a link
    assert (out / "accuracy.png").stat().st_size > 10_000

    cfg = compose("task=minimal_pairs", "scorer=[pll]", f"model.masked.path={tiny['bert']}", *common,
                  "task.methods=[lp]", "task.variants=[original,word_l2r]", f"out_dir={tmp_path}/pll")
    report = run_task(cfg)
    assert set(report["methods"]) == {"pll.original.lp", "pll.word_l2r.lp"}
    assert "variant:word_l2r" in report["scorers"]["pll.word_l2r"] and "case:keep" in report["scorers"]["pll.original"]
    with pytest.raises(ConfigError, match="select a causal LM"):
        run_task(compose("task=minimal_pairs", "scorer=[pll]", f"model.masked.path={tiny['bert']}", *common,
                         "task.methods=[yes_no]", f"out_dir={tmp_path}/bad"))


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
@pytest.mark.parametrize("asked", [[], ["task.score_eos=true"]], ids=["default", "eos_asked"])
def test_minimal_pairs_lp_is_the_sentence_without_eos_unless_asked_and_counts_what_it_scored(tiny, tmp_path, arch,
                                                                                              asked):
    from rescorer.tasks import run_task

    eos = bool(asked)
    cfg = compose("task=minimal_pairs", "scorer=[ll]", f"model.causal.path={tiny[arch]}", f"pairs.path={BLIMP}",
                  "pairs.limit=1", "task.methods=[lp,mean_lp,pen_lp]", f"engine.store={tmp_path}/s.sqlite",
                  "engine.progress=false", "engine.threads=1", f"out_dir={tmp_path}/out", *asked)
    report = run_task(cfg)
    assert report["eos_scored"] == {"ll": eos}
    assert ("LP with log P(EOS)" if eos else "LP without EOS") in (tmp_path / "out" / "report.md").read_text()
    tok = AutoTokenizer.from_pretrained(tiny[arch])
    model = AutoModelForCausalLM.from_pretrained(tiny[arch]).eval()
    records = [json.loads(line) for line in (tmp_path / "out" / "pairs.jsonl").read_text().splitlines()]
    assert len(records) == 3
    for record in records:
        for index, side in enumerate(("good", "bad")):
            lp, count = naive_ll(model, tok, record[side], eos)
            assert count == len(tok(record[side], add_special_tokens=False)["input_ids"]) + eos
            assert record["tokens"]["ll"][index] == count
            scores = {method: record["methods"][f"ll.{method}"][side][0] for method in ("lp", "mean_lp", "pen_lp")}
            assert scores["lp"] == pytest.approx(lp, abs=1e-4)
            assert scores["mean_lp"] == pytest.approx(lp / count, abs=1e-5)
            assert scores["pen_lp"] == pytest.approx(lp / ((5 + count) / 6) ** 0.8, abs=1e-4)


def test_desiderata_task_reports_each_variant(tiny, tmp_path):
    from rescorer.tasks import run_task

    text = tmp_path / "sentences.txt"
    text.write_text("".join(f"{p.good}\n" for p in read_pairs(BLIMP)))
    cfg = compose("task=desiderata", f"task.sentences.path={text}", "task.sentences.column=null",
                  "task.sentences.name=fixture", f"task.masked={tiny['bert']}", f"task.causal={tiny['gpt2']}",
                  f"engine.store={tmp_path}/s.sqlite", "engine.progress=false", f"out_dir={tmp_path}/out")
    report = run_task(cfg)
    assert set(report["variants"]) == {"original", "word_l2r", "whole_word", "sentence_l2r", "ll"}
    assert report["variants"]["ll"]["causal"] is None and report["n_sentences"] == 12
    assert set(report["multi_token_words"]) == {"masked", "causal"}
    verdict = report["word_l2r_beats_original"]
    table = report["variants"]
    assert verdict["length"] == (table["word_l2r"]["length"] > table["original"]["length"])
    assert (tmp_path / "out" / "desiderata.png").stat().st_size > 10_000
    assert cfg.out_dir == f"{tmp_path}/out" and compose("task=desiderata").out_dir == "exp/eventsadapt/desiderata"


@pytest.mark.parametrize("experiment, methods", [
    ("blimp_smollm2", ["lp", "mean_lp", "pen_lp", "template_lp", "template_mean_lp", "template_pen_lp", "yes_no"]),
    ("blimp_mlm", ["lp"]),
])
def test_experiments_read_the_13_real_blimp_paradigms(experiment, methods):
    from hydra.utils import instantiate

    cfg = compose(f"+experiment={experiment}")
    assert cfg.task.name == "minimal_pairs" and list(cfg.task.methods) == methods
    need(SHARED / "blimp")
    pairs = instantiate(cfg.pairs).read()
    assert len(pairs) == 13_000 and len({p.phenomenon for p in pairs}) == 13


def test_eventsadapt_is_782_plausible_implausible_pairs():
    from hydra.utils import instantiate

    need(SHARED / "eventsadapt")
    pairs = instantiate(compose("pairs=eventsadapt").pairs).read()
    assert len(pairs) == 782 and {p.phenomenon for p in pairs} == {"AI", "AAN", "AAR"}
    assert pairs[0].good == "The raider caught the illness." and pairs[0].bad == "The illness caught the raider."
    assert len(read_sentences(SHARED / "eventsadapt" / "clean_EventsAdapt_SentenceSet.csv", "Sentence")) == 1564
