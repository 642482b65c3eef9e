"""Scorers are exact: every PLL variant equals a naive per-copy loop, and minicons where it has the variant."""
from __future__ import annotations

import time

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

from rescorer import load_scorer
from rescorer.errors import ConfigError, ScorerError
from rescorer.scorers.masked import VARIANTS


TEXTS = [
    "MISTER QUILTER IS THE APOSTLE OF THE MIDDLE CLASSES",
    "NOR IS MISTER QUILTER'S MANNER LESS INTERESTING THAN HIS MATTER",
    "A",
    "",
    "HE TELLS US THAT AT THIS FESTIVE SEASON OF THE YEAR WITH CHRISTMAS AND ROAST BEEF",
    "UNQUESTIONABLY PHOTOSYNTHESIS'S ANTIDISESTABLISHMENTARIANISM",
]


def naive_pll(model_dir, text: str, variant: str) -> float:
    """Build each masked copy on its own, run the full model on it, read the scored token's log-prob."""
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForMaskedLM.from_pretrained(model_dir).eval()
    enc = tok(text, return_special_tokens_mask=True)
    ids, words = enc["input_ids"], enc.word_ids()
    scored = [i for i, special in enumerate(enc["special_tokens_mask"]) if not special]
    total = 0.0
    for i in scored:
        if variant == "original":
            masked = [i]
        elif variant == "word_l2r":
            masked = [j for j in scored if j >= i and words[j] == words[i]]
        elif variant == "whole_word":
            masked = [j for j in scored if words[j] == words[i]]
        else:
            masked = [j for j in scored if j >= i]
        copy = list(ids)
        for j in masked:
            copy[j] = tok.mask_token_id
        with torch.no_grad():
            logits = model(torch.tensor([copy])).logits[0, i]
        total += torch.log_softmax(logits, -1)[ids[i]].item()
    return total if scored else float("-inf")  # nothing to mask: no probability (README "Guarantees")


def naive_ll(model_dir, text: str) -> float:
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    ids = [tok.bos_token_id, *tok(text, add_special_tokens=False)["input_ids"]]
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([ids])).logits[0], -1)
    return sum(logp[i, ids[i + 1]].item() for i in range(len(ids) - 1))


@pytest.mark.parametrize("arch", ["bert", "roberta"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_pll_equals_naive_loop(tiny_models, arch, variant):
    scorer = load_scorer("pll", str(tiny_models[arch]), variant=variant, progress=False)
    got = scorer.score(TEXTS)
    want = [naive_pll(tiny_models[arch], t, variant) for t in TEXTS]
    np.testing.assert_allclose(got, want, atol=1e-4)
    assert got[3] == float("-inf")  # the empty text has nothing to mask: no probability


@pytest.mark.parametrize("arch", ["bert", "roberta", "distilbert", "albert", "electra", "modernbert"])
def test_head_at_mask_equals_full_logits(tiny_models, arch):
    fast = load_scorer("pll", str(tiny_models[arch]), variant="original", progress=False)
    full = load_scorer("pll", str(tiny_models[arch]), variant="original", progress=False, head_at_mask=False)
    assert fast.adapter.head is not None and full.adapter.head is None
    assert fast.adapter.encoder_at.fast == (arch in ("bert", "roberta", "electra"))  # last layer only at the mask
    np.testing.assert_allclose(fast.score(TEXTS), full.score(TEXTS), atol=1e-4)


def test_last_layer_at_mask_equals_the_whole_last_layer(tiny_models):
    whole = load_scorer("pll", str(tiny_models["bert"]), progress=False, last_layer_at_mask=False)
    fast = load_scorer("pll", str(tiny_models["bert"]), progress=False)
    assert fast.adapter.encoder_at.fast and not whole.adapter.encoder_at.fast
    np.testing.assert_allclose(fast.token_scores(TEXTS[0:2])[0], whole.token_scores(TEXTS[0:2])[0], atol=1e-5)


def test_token_scores_sum_to_score_and_skip_special_tokens(tiny_models):
    scorer = load_scorer("pll", str(tiny_models["bert"]), progress=False)
    tok = AutoTokenizer.from_pretrained(tiny_models["bert"])
    for text, tokens, total in zip(TEXTS, scorer.token_scores(TEXTS), scorer.score(TEXTS)):
        assert len(tokens) == len(tok(text, add_special_tokens=False)["input_ids"])
        assert sum(tokens) == pytest.approx(total, abs=1e-9) if tokens else total == float("-inf")


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_ll_equals_naive_loop(tiny_models, arch):
    scorer = load_scorer("ll", str(tiny_models[arch]), score_eos=False, progress=False)
    np.testing.assert_allclose(scorer.score(TEXTS), [naive_ll(tiny_models[arch], t) for t in TEXTS], atol=1e-4)


def test_score_eos_adds_the_end_token(tiny_models):
    plain = load_scorer("ll", str(tiny_models["gpt2"]), score_eos=False, progress=False)
    with_eos = load_scorer("ll", str(tiny_models["gpt2"]), score_eos=True, progress=False)
    for a, b in zip(plain.token_scores(TEXTS), with_eos.token_scores(TEXTS)):
        assert len(b) == len(a) + 1 and b[:-1] == pytest.approx(a, abs=1e-4)


@pytest.mark.parametrize("kind, arch", [("pll", "bert"), ("ll", "gpt2")])
def test_scores_do_not_depend_on_budget_or_order(tiny_models, kind, arch):
    reference = load_scorer(kind, str(tiny_models[arch]), budget=4096, progress=False).score(TEXTS)
    for budget in (1, 37, 200):
        scorer = load_scorer(kind, str(tiny_models[arch]), budget=budget, progress=False)
        np.testing.assert_allclose(scorer.score(TEXTS), reference, atol=1e-4)
        order = np.random.default_rng(budget).permutation(len(TEXTS))
        np.testing.assert_allclose(scorer.score([TEXTS[i] for i in order]), [reference[i] for i in order], atol=1e-4)


def test_identical_texts_are_scored_once(tiny_models):
    scorer = load_scorer("ll", str(tiny_models["gpt2"]), progress=False)
    result = scorer.compute(["A CAT", "A CAT", "A DOG", "A CAT"])
    assert result.totals[0] == result.totals[1] == result.totals[3]
    assert result.stats.sentences == 2 and result.stats.rows_computed == 1  # one prefix tree holds both
    unshared = load_scorer("ll", str(tiny_models["gpt2"]), share_prefixes=False, progress=False)
    assert unshared.compute(["A CAT", "A CAT", "A DOG", "A CAT"]).stats.rows_computed == 2


def test_normalisation_changes_the_scored_text_only(tiny_models):
    scorer = load_scorer("ll", str(tiny_models["gpt2"]), case="sentence", append_period=True, progress=False)
    assert scorer.normalise(["HELLO  WORLD"]) == ["Hello world."]
    plain = load_scorer("ll", str(tiny_models["gpt2"]), progress=False)
    assert scorer.score(["HELLO WORLD"]) == pytest.approx(plain.score(["Hello world."]))
    assert "case:sentence|period:yes" in scorer.signature


def test_out_of_memory_halves_the_budget_and_keeps_scores(tiny_models, monkeypatch):
    scorer = load_scorer("pll", str(tiny_models["bert"]), budget=4096, progress=False)
    reference = scorer.score(TEXTS)
    real_forward = scorer.adapter.forward

    def forward(pool, picked):
        if pool.length[picked].sum() > 300:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real_forward(pool, picked)

    monkeypatch.setattr(scorer.adapter, "forward", forward)
    result = scorer.compute(TEXTS)
    np.testing.assert_allclose(result.totals, reference, atol=1e-4)
    assert result.stats.budgets and result.stats.budgets[-1] < 4096


def test_bad_options_are_clear_errors(tiny_models, tmp_path):
    with pytest.raises(ConfigError, match="variant"):
        load_scorer("pll", str(tiny_models["bert"]), variant="random")
    with pytest.raises(ConfigError, match="kind"):
        load_scorer("mlm", str(tiny_models["bert"]))
    with pytest.raises(ScorerError, match="cannot load model"):
        load_scorer("pll", str(tmp_path))


DEEP = "[" * 100_000 + "]" * 100_000  # transformers' recursive JSON reader runs out of stack long before


def nested_too_deep(text: str) -> str:
    return text.rstrip().removesuffix("}") + f', "nested": {DEEP}}}'


def without_added_tokens(text: str) -> str:
    import json

    return json.dumps({k: v for k, v in json.loads(text).items() if k != "added_tokens"})


TOO_DEEP = "JSON nested too deep (over 100 levels)"


@pytest.mark.parametrize("kind, file, change, says", [
    ("ll", "config.json", nested_too_deep, TOO_DEEP),
    ("student", "config.json", nested_too_deep, TOO_DEEP),  # read before the model is
    ("ll", "tokenizer.json", nested_too_deep, TOO_DEEP),
    ("ll", "tokenizer_config.json", nested_too_deep, TOO_DEEP),
    ("ll", "tokenizer.json", without_added_tokens, 'no "added_tokens", which transformers needs: add "added_tokens": '
                                                   "[] (none) to it"),
], ids=["config nested too deep", "student config nested too deep", "tokenizer nested too deep",
        "tokenizer config nested too deep", "tokenizer without added tokens"])
def test_a_model_file_transformers_cannot_read_is_one_error_naming_it(kind, file, change, says, tiny_causal, tmp_path):
    import shutil

    model = shutil.copytree(tiny_causal, tmp_path / "model")
    (model / file).write_text(change((model / file).read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(ScorerError) as caught:
        load_scorer(kind, str(model), store=None, progress=False)
    assert str(caught.value) == f"cannot load model {str(model)!r}: {model / file}: {says}"


def test_offline_hub_name_says_how_to_use_a_local_copy(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.perf_counter()
    with pytest.raises(ConfigError, match="'no-such-org/no-such-bert' is neither a local directory nor in the "
                                          "local Hugging Face cache.*set offline.*--local-dir"):
        load_scorer("pll", "no-such-org/no-such-bert")
    assert time.perf_counter() - start < 5


def test_a_hub_name_out_of_reach_and_not_cached_is_a_config_error_at_once(monkeypatch):
    from rescorer.scorers import loading

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(loading, "hub_reachable", lambda: False)
    start = time.perf_counter()
    for kind in ("ll", "pll", "student"):
        with pytest.raises(ConfigError, match="'surely-not-a-model-xyz' .*the Hugging Face hub cannot be reached"):
            load_scorer(kind, "surely-not-a-model-xyz")
    assert time.perf_counter() - start < 5


@pytest.mark.slow
def test_a_cached_hub_name_loads_from_the_cache_when_the_hub_is_out_of_reach(tiny_models, tmp_path):
    """A Hugging Face cache laid out by hand (refs/main → snapshots/<commit>/files) holding the tiny GPT-2."""
    import os
    import shutil
    import subprocess
    import sys

    commit = "0" * 40
    repo = tmp_path / "hub" / "models--tiny-org--tiny-gpt2"
    shutil.copytree(tiny_models["gpt2"], repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    env = {**{k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")},
           "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_ENDPOINT": "http://127.0.0.1:9", "OMP_NUM_THREADS": "1"}
    code = "import rescorer; print(rescorer.load_scorer('ll', 'tiny-org/tiny-gpt2').score(['A CAT'])[0])"
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    local = load_scorer("ll", str(tiny_models["gpt2"]), progress=False).score(["A CAT"])[0]
    assert float(result.stdout.split()[-1]) == pytest.approx(local, abs=1e-5)
    assert "Retrying" not in result.stderr


def test_scoring_an_in_memory_model_leaves_its_layers_alone(tiny_models):
    """The last-layer-at-mask trunk shares weights with the model but must not cut the model's own layer list."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    model = AutoModelForMaskedLM.from_pretrained(tiny_models["bert"])
    layers = len(model.base_model.encoder.layer)
    scorer = load_scorer("pll", str(tiny_models["bert"]), loaded=(AutoTokenizer.from_pretrained(tiny_models["bert"]), model))
    scorer.score(["a short sentence"])
    assert len(model.base_model.encoder.layer) == layers


@pytest.mark.slow
@pytest.mark.parametrize("kind, arch", [("pll", "bert"), ("ll", "llama")])
def test_compiled_layers_score_like_the_eager_model(tiny_models, kind, arch):
    eager = load_scorer(kind, str(tiny_models[arch]), progress=False)
    compiled = load_scorer(kind, str(tiny_models[arch]), compile=True, progress=False)
    assert compiled.adapter.spec["compile"] and compiled.signature == eager.signature
    np.testing.assert_allclose(compiled.score(TEXTS[:3]), eager.score(TEXTS[:3]), atol=1e-4)


def test_an_empty_hypothesis_never_wins_because_it_had_nothing_to_score(tiny_models):
    """LL scores the end of the sentence (log P(EOS | BOS) for ""); PLL gives a text with nothing to mask −inf."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    ll = load_scorer("ll", str(tiny_models["gpt2"]), progress=False)
    tok = AutoTokenizer.from_pretrained(tiny_models["gpt2"])
    model = AutoModelForCausalLM.from_pretrained(tiny_models["gpt2"]).eval()
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([[tok.eos_token_id]])).logits[0, -1].double(), -1)
    empty, one = ll.compute(["", "A CAT"])
    assert empty[0] == pytest.approx(logp[tok.eos_token_id].item(), abs=1e-4) and len(empty[1]) == 1
    assert empty[0] < 0 and len(one[1]) == len(tok("A CAT")["input_ids"]) + 1
    pll = load_scorer("pll", str(tiny_models["bert"]), progress=False)
    assert pll.score(["", "A CAT"])[0] == float("-inf")
    assert pll.perplexity(["", "A CAT"]).tokens == len(pll.token_scores(["A CAT"])[0])


def test_a_misspelt_local_path_is_an_error_at_once(tmp_path, monkeypatch):
    from rescorer.scorers.loading import looks_like_hub_name

    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    start = time.perf_counter()
    with pytest.raises(ScorerError, match="'models/gtp2': no such file or directory"):
        load_scorer("ll", "models/gtp2")
    with pytest.raises(ScorerError, match="no such file"):
        load_scorer("pll", "./bert-base")
    assert time.perf_counter() - start < 5
    assert looks_like_hub_name("openai-community/gpt2") and looks_like_hub_name("gpt2")
    assert not looks_like_hub_name("models/gtp2") and not looks_like_hub_name("/abs/path")


def naive_windowed_pll(model_dir, text: str, width: int) -> list[float]:
    """README's window rule by hand: chunks of width // 2 scored tokens, each in a window of ``width`` tokens
    (specials included) centred on it; one full-model pass per masked token (variant original)."""
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForMaskedLM.from_pretrained(model_dir).eval()
    enc = tok(text, return_special_tokens_mask=True)
    ids, special = enc["input_ids"], enc["special_tokens_mask"]
    head, tail = ids[: special.index(0)], ids[len(ids) - special[::-1].index(0):]
    content = [t for t, s in zip(ids, special) if not s]
    keep, n = width - len(head) - len(tail), len(content)
    stride = keep // 2
    scores = []
    for j in range(n):
        start = min(max((j // stride) * stride - (keep - stride) // 2, 0), n - keep) if n > keep else 0
        window = content[start : start + keep]
        copy = head + window[: j - start] + [tok.mask_token_id] + window[j - start + 1 :] + tail
        with torch.no_grad():
            logits = model(torch.tensor([copy])).logits[0, len(head) + j - start]
        scores.append(torch.log_softmax(logits, -1)[content[j]].item())
    return scores


def naive_windowed_ll(model_dir, text: str, width: int, stride: int) -> list[float]:
    """Windows of ``width`` ids ending at width, width + stride, …; each target scored in the first that reaches it."""
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    ids = [tok.bos_token_id, *tok(text, add_special_tokens=False)["input_ids"], tok.eos_token_id]
    scores, end = [], 0
    while end < len(ids):
        new_end = min(len(ids), max(end + stride, width) if end else min(width, len(ids)))
        start = max(0, new_end - width)
        with torch.no_grad():
            logp = torch.log_softmax(model(torch.tensor([ids[start:new_end]])).logits[0], -1)
        first = max(end - 1, 0)
        scores += [logp[j - start, ids[j + 1]].item() for j in range(first, new_end - 1)]
        end = new_end
    return scores


LONG = " ".join(" ".join(TEXTS[2:] * 3).split())


@pytest.mark.parametrize("arch", ["bert", "roberta"])
def test_long_texts_pll_in_windows_equal_a_naive_windowed_loop(tiny_models, arch):
    windowed = load_scorer("pll", str(tiny_models[arch]), variant="original", window=16, progress=False)
    plain = load_scorer("pll", str(tiny_models[arch]), variant="original", progress=False)
    tokens = windowed.token_scores([LONG])[0]
    assert len(tokens) > 40 and np.isfinite(tokens).all()
    np.testing.assert_allclose(tokens, naive_windowed_pll(tiny_models[arch], LONG, 16), atol=1e-4)
    short = [t for t in TEXTS if t and len(AutoTokenizer.from_pretrained(tiny_models[arch])(t)["input_ids"]) <= 16]
    np.testing.assert_allclose(windowed.score(short), plain.score(short), atol=1e-5)


@pytest.mark.parametrize("kind, arch", [("pll", "bert"), ("ll", "gpt2")])
def test_long_texts_score_the_same_together_as_alone(tiny_models, kind, arch):
    """Windows of several long texts batched together read each text's own ids (the flat id pool)."""
    scorer = load_scorer(kind, str(tiny_models[arch]), window=16, progress=False, budget=64,
                         **({"variant": "whole_word"} if kind == "pll" else {}))
    texts = [LONG, TEXTS[4], " ".join(TEXTS[:2]), TEXTS[0]]
    together = scorer.token_scores(texts)
    for text, tokens in zip(texts, together):
        np.testing.assert_allclose(tokens, scorer.token_scores([text])[0], atol=1e-5)


def test_long_texts_ll_in_strided_windows_equal_a_naive_loop(tiny_models):
    windowed = load_scorer("ll", str(tiny_models["gpt2"]), window=12, stride=5, progress=False)
    plain = load_scorer("ll", str(tiny_models["gpt2"]), progress=False)
    tokens = windowed.token_scores([LONG])[0]
    np.testing.assert_allclose(tokens, naive_windowed_ll(tiny_models["gpt2"], LONG, 12, 5), atol=1e-4)
    assert len(tokens) == len(plain.token_scores([LONG])[0])
    np.testing.assert_allclose(windowed.score(["A CAT"]), plain.score(["A CAT"]), atol=1e-5)


@pytest.mark.slow
def test_a_2000_word_hypothesis_is_scored_not_crashed(tiny_models):
    text = " ".join(["THE CAT SAT ON THE MAT"] * 334)[: 2000 * 4]
    for kind, arch in (("pll", "bert"), ("ll", "gpt2")):
        scorer = load_scorer(kind, str(tiny_models[arch]), variant="original", progress=False) if kind == "pll" \
            else load_scorer(kind, str(tiny_models[arch]), progress=False)
        limit = scorer.adapter.positions_limit if kind == "pll" else scorer.adapter.width
        tokens = scorer.token_scores([text])[0]
        assert len(tokens) > limit and np.isfinite(tokens).all()
