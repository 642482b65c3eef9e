"""PCFG ground truth: exact conditionals equal brute-force enumeration, rule files fail loudly, the induced
treebank grammar is proper, sampling is seeded, the scorer matches the charts, and training moves an LM
towards the true distribution."""
from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import replace
from functools import lru_cache

import numpy as np
import pytest

from rescorer import load_scorer
from rescorer.errors import ConfigError, NBestFormatError, ScorerError
from rescorer.pcfg import (
    PCFG,
    Charts,
    GrammarFileError,
    Induction,
    induce,
    read_grammar,
    write_grammar,
)
from rescorer.pcfg.treebank import ROOT, cnf_trees, parse_trees, read_treebank

from .conftest import ROOT as REPO
from .conftest import SHARED, need

FIXTURES = REPO / "tests" / "fixtures" / "pcfg"
TREEBANK = SHARED / "treebank" / "treebank.zip"


class Naive:
    """Inside probabilities of whole strings by the textbook recursion (memoised on substrings), from the
    grammar's rule list: an independent reference for the vectorised charts."""

    def __init__(self, grammar: PCFG):
        self.grammar = grammar
        self.binary: dict[int, list[tuple[int, int, float]]] = {}
        for a, b, c, p in zip(grammar.lhs, grammar.left, grammar.right, grammar.prob):
            self.binary.setdefault(int(a), []).append((int(b), int(c), float(p)))
        self.lexical = {(int(a), int(w)): float(p)
                        for a, w, p in zip(grammar.lex_lhs, grammar.lex_word, grammar.lex_prob)}
        self.inside = lru_cache(maxsize=None)(self._inside)

    def _inside(self, symbol: int, words: tuple[int, ...]) -> float:
        if len(words) == 1:
            return self.lexical.get((symbol, words[0]), 0.0)
        return sum(p * self.inside(b, words[:k]) * self.inside(c, words[k:])
                   for b, c, p in self.binary.get(symbol, ()) for k in range(1, len(words)))

    def sentence(self, words: tuple[int, ...]) -> float:
        return self.inside(self.grammar.start, words)

    def masked(self, words: tuple[int, ...]) -> list[float]:
        """P(w_i | w_\\i) = P(w) / Σ_v P(w with v at i)."""
        vocabulary = range(len(self.grammar.words))
        return [self.sentence(words) / sum(self.sentence(words[:i] + (v,) + words[i + 1:]) for v in vocabulary)
                for i in range(len(words))]

    def prefix(self, words: tuple[int, ...], longest: int) -> float:
        """Σ P(s) over every sentence s of at most ``longest`` words that starts with ``words``."""
        vocabulary = range(len(self.grammar.words))
        return sum(self.sentence(words + tail) for extra in range(longest - len(words) + 1)
                   for tail in itertools.product(vocabulary, repeat=extra))

    def length_tail(self, longest: int) -> float:
        """P(a sentence has more than ``longest`` words), by dynamic programming over lengths."""
        g = self.grammar
        mass = np.zeros((g.num_symbols, longest + 1))
        mass[:, 1] = np.bincount(g.lex_lhs, g.lex_prob, g.num_symbols)
        for n in range(2, longest + 1):
            for a, rules in self.binary.items():
                mass[a, n] = sum(p * mass[b, k] * mass[c, n - k] for b, c, p in rules for k in range(1, n))
        return 1.0 - mass[g.start].sum()


# ---- (a) exact conditionals against brute force
@pytest.mark.parametrize("name, longest", [("acyclic", 5), ("recursive", 10)])
def test_conditionals_equal_brute_force_enumeration(name, longest):
    grammar = read_grammar(FIXTURES / f"{name}.pcfg")
    naive, charts = Naive(grammar), Charts(grammar)
    tail = naive.length_tail(longest)
    assert tail < 1e-12  # every sentence longer than `longest` together: the brute-force prefix sums are exact to this
    sentences = {tuple(grammar.encode(s.split())) for s in grammar.sample(6, seed=1, max_length=5)}
    assert len(sentences) >= 3
    for words in sorted(sentences):
        ids = np.array(words)
        assert charts.sentence_log_prob(ids) == pytest.approx(math.log(naive.sentence(words)), abs=1e-12)
        np.testing.assert_allclose(np.exp(charts.masked_log_probs(ids)), naive.masked(words), rtol=0, atol=1e-9)
        prefixes = [naive.prefix(words[:j], longest) for j in range(len(words) + 1)]
        assert prefixes[0] == pytest.approx(1.0, abs=1e-12)
        np.testing.assert_allclose(np.exp(charts.prefix_log_probs(ids)), prefixes, rtol=0, atol=1e-9)
        causal = np.exp(charts.causal_log_probs(ids, eos=True))
        expected = [prefixes[j + 1] / prefixes[j] for j in range(len(words))] + [naive.sentence(words) / prefixes[-1]]
        np.testing.assert_allclose(causal, expected, rtol=0, atol=1e-9)


def test_an_impossible_context_is_minus_infinity_and_long_sentences_do_not_underflow():
    grammar = read_grammar(FIXTURES / "recursive.pcfg")
    charts = Charts(grammar)
    impossible = grammar.encode("b b".split())  # no sentence starts with b
    assert np.isneginf(charts.masked_log_probs(impossible)).all()
    assert np.isneginf(charts.causal_log_probs(impossible)).all()
    long = grammar.encode(("a " * 150).split())  # one derivation: S -> 'a' under 149 × (S -> S A, A -> 'a')
    assert charts.sentence_log_prob(long) == pytest.approx(math.log(0.01) + 149 * math.log(0.001 * 0.7), rel=1e-12)
    assert charts.sentence_log_prob(long) < -1000  # e^-1087: far below the smallest float
    assert np.isfinite(charts.masked_log_probs(long)).all() and np.isfinite(charts.causal_log_probs(long)).all()


# ---- (b) the rule file
GOOD = "%start S\n1.0 S -> A B\n1.0 A -> 'a'\n0.5 B -> 'b'\n0.5 B -> '''\n"


@pytest.mark.parametrize("text, line, problem", [
    ("1.0 S -> A B\n1.0 A -> 'a'\n1.0 B -> C\n", 3, "unary"),
    ("x S -> 'a'\n", 1, "not a number"),
    ("1.5 S -> 'a'\n", 1, "(0, 1]"),
    ("1.0 S 'a'\n", 1, "expected 'probability LHS -> RHS'"),
    ("1.0 S -> A B C\n1.0 A -> 'a'\n", 1, "Chomsky normal form"),
    ("0.5 S -> 'a'\n0.5 S -> 'a'\n", 2, "duplicate rule"),
    ("%start S\n%start T\n1.0 S -> 'a'\n", 2, "second %start"),
    ("1.0 S -> A B\n1.0 A -> 'a'\n", 1, "no rules: 'B'"),
    ("%start T\n1.0 S -> 'a'\n", None, "no rules: 'T'"),
    ("# only a comment\n", None, "no rules"),
    ("1.0 S -> A 'b'\n1.0 A -> 'a'\n", 1, "two nonterminals"),
    ("0.5 S -> 'a'\n0.3 A -> 'a'\n0.4 S -> 'b'\n1.0 A -> 'b'\n", 1, "'S' sum to 0.9"),
])
def test_a_malformed_rule_file_names_file_line_and_value(tmp_path, text, line, problem):
    path = tmp_path / "bad.pcfg"
    path.write_text(text)
    with pytest.raises(GrammarFileError) as err:
        read_grammar(path)
    assert err.value.line == line and err.value.path == str(path)
    assert str(err.value).startswith(f"{path}:{line}:" if line else f"{path}:") and problem in str(err.value)


def test_rule_files_round_trip_exactly_and_normalise(tmp_path):
    path = tmp_path / "g.pcfg"
    path.write_text(GOOD.replace("0.5 B", "0.4999999 B", 1))  # within 1e-6 of 1: accepted, then renormalised
    grammar = read_grammar(path)
    assert grammar.words == ("'", "a", "b") and grammar.symbols[grammar.start] == "S"
    np.testing.assert_allclose(grammar.totals, 1.0, rtol=0, atol=1e-15)
    again = read_grammar(write_grammar(grammar, tmp_path / "again.pcfg", comment="round trip"))
    assert again.fingerprint == grammar.fingerprint
    shuffled = read_grammar(FIXTURES / "agreement.pcfg")
    order = np.random.default_rng(0).permutation(len(shuffled.prob))
    reordered = replace(shuffled, **{k: getattr(shuffled, k)[order] for k in ("lhs", "left", "right", "prob")})
    assert reordered.fingerprint == shuffled.fingerprint  # the rules' storage order changes neither the identity
    assert reordered.sample(30, seed=2) == shuffled.sample(30, seed=2)  # nor the samples
    with pytest.raises(NBestFormatError, match="no such file"):
        read_grammar(tmp_path / "missing.pcfg")
    with pytest.raises(ConfigError, match="sum to 1"):
        PCFG.from_rules("S", [("S", "A", "A", 0.5)], [("A", "a", 1.0)])


# ---- (c) induction from the treebank
MINI = """( (S (NP-SBJ-1 (DT The) (NN dog)) (VP (VBZ barks) (NP (-NONE- *T*-1))) (. .)) )
( (S (NP-SBJ (DT the) (JJ old) (NN dog)) (VP (VBD barked)) (. .)) )"""


def test_trees_are_cleaned_collapsed_and_binarised():
    first, second = [list(cnf_trees([t], markov=1))[0] for t in parse_trees(MINI)]
    # -NONE- and its NP vanish, NP-SBJ-1 → NP, the VP left with one word collapses to VP+VBZ, ROOT absorbs S
    assert first == (ROOT, [("NP", [("DT", ["The"]), ("NN", ["dog"])]),
                            ("ROOT|<VP+VBZ>", [("VP+VBZ", ["barks"]), (".", ["."])])])
    assert second[1][0] == ("NP", [("DT", ["the"]), ("NP|<JJ>", [("JJ", ["old"]), ("NN", ["dog"])])])
    with pytest.raises(GrammarFileError, match="unbalanced"):
        parse_trees("( (S (NN a) )) )", "x.mrg")


def test_induced_probabilities_are_relative_frequencies_with_add_k():
    trees = parse_trees(MINI)
    grammar = induce(trees, Induction(k=0.5, markov=1, unk_below=1))
    words = grammar.words  # . The barked barks dog old the: 7 words
    assert len(words) == 7
    rules = {(grammar.symbols[a], grammar.symbols[b], grammar.symbols[c]): p
             for a, b, c, p in zip(grammar.lhs, grammar.left, grammar.right, grammar.prob)}
    lexical = {(grammar.symbols[a], words[w]): p
               for a, w, p in zip(grammar.lex_lhs, grammar.lex_word, grammar.lex_prob)}
    assert rules["ROOT", "NP", "ROOT|<VP+VBZ>"] == pytest.approx(0.5)     # 1 of ROOT's 2 expansions
    assert rules["NP", "DT", "NP|<JJ>"] == pytest.approx(0.5)
    assert lexical["NN", "dog"] == pytest.approx((2 + 0.5) / (2 + 0.5 * 7))  # (c + k) / (c(NN) + k|V|)
    assert lexical["NN", "old"] == pytest.approx(0.5 / (2 + 0.5 * 7))
    assert lexical["DT", "the"] == pytest.approx(1.5 / 5.5)
    unk = induce(trees, Induction(k=0.0, markov=1, unk_below=2))
    assert set(unk.words) == {".", "dog", "<unk>"}  # words seen once become <unk>


@pytest.fixture(scope="module")
def treebank_grammar() -> PCFG:
    trees = read_treebank(need(TREEBANK))
    assert len(trees) == 3914
    return induce(trees)


@pytest.mark.slow
def test_the_induced_treebank_grammar_is_proper(treebank_grammar):
    grammar = treebank_grammar
    totals = Counter()
    for a, p in zip(grammar.lhs.tolist() + grammar.lex_lhs.tolist(), grammar.prob.tolist() + grammar.lex_prob.tolist()):
        totals[a] += p
    assert set(totals) == set(range(grammar.num_symbols))
    assert max(abs(t - 1) for t in totals.values()) < 1e-9
    assert grammar.partition().min() > 1 - 1e-6  # consistent: no probability leaks to infinite derivations
    assert "<unk>" in grammar.words and grammar.symbols[grammar.start] == ROOT


# ---- (d) sampling
def test_sampling_is_seeded_and_follows_the_distribution():
    grammar = read_grammar(FIXTURES / "acyclic.pcfg")
    assert grammar.sample(50, seed=3) == grammar.sample(50, seed=3) != grammar.sample(50, seed=4)
    drawn = Counter(grammar.sample(20000, seed=0))
    naive = Naive(grammar)
    for sentence, count in drawn.most_common(8):
        assert count / 20000 == pytest.approx(naive.sentence(tuple(grammar.encode(sentence.split()))), abs=0.01)
    assert sum(drawn.values()) == 20000 and all(len(s.split()) <= 5 for s in drawn)
    bounded = grammar.sample(200, seed=0, min_length=3, max_length=4)
    assert {len(s.split()) for s in bounded} == {3, 4}


@pytest.mark.parametrize("source", ["agreement", "recursive", pytest.param("treebank", marks=pytest.mark.slow)])
def test_every_sampled_sentence_is_possible(source, request):
    grammar = (request.getfixturevalue("treebank_grammar") if source == "treebank"
               else read_grammar(FIXTURES / f"{source}.pcfg"))
    charts = Charts(grammar)
    for sentence in grammar.sample(40, seed=7, max_length=12):
        assert np.isfinite(charts.sentence_log_prob(grammar.encode(sentence.split())))


# ---- (e) the scorer
def test_the_scorer_through_the_engine_equals_the_charts(tmp_path):
    from rescorer.tasks import scorers_of

    from .test_cli import compose_config

    grammar_file = FIXTURES / "recursive.pcfg"
    cfg = compose_config("scorer=[pcfg]", f"scorer.pcfg.model={grammar_file}", "scorer.pcfg.oov=error",
                         f"engine.store={tmp_path}/store.sqlite")
    masked = scorers_of(cfg)["pcfg"]
    texts = ["a b", "c b c a", "a b", "c a b a b", "b b"]
    charts, grammar = masked.adapter.charts, masked.adapter.grammar
    first = masked.compute(texts)
    for text, tokens in zip(texts, first.tokens):
        np.testing.assert_array_equal(tokens, charts.masked_log_probs(grammar.encode(text.split())))
    assert first.stats.sentences == 4 and first.stats.cached == 0
    assert masked.compute(texts).stats.cached == 4  # the second call is answered by the store
    causal = load_scorer("pcfg", str(grammar_file), variant="causal", score_eos=True, store=tmp_path / "store.sqlite")
    assert causal.signature != masked.signature
    for text, tokens in zip(texts, causal.token_scores(texts)):
        np.testing.assert_array_equal(tokens, charts.causal_log_probs(grammar.encode(text.split()), eos=True))
    assert causal.perplexity(["c b c a"]).tokens == 5  # four words and the end
    with pytest.raises(ScorerError, match="'z'"):
        masked.score(["a z b"])
    with pytest.raises(ConfigError, match="<unk>"):
        load_scorer("pcfg", str(grammar_file), oov="unk")
    with pytest.raises(ConfigError, match="variant"):
        load_scorer("pcfg", str(grammar_file), variant="both")


@pytest.mark.slow
def test_unknown_words_score_as_unk_in_the_treebank_grammar(treebank_grammar):
    scorer = load_scorer("pcfg", None, grammar=treebank_grammar, oov="unk")
    grammar, text = scorer.adapter.grammar, "The zyzzyva rose ."
    words = [w if w in grammar.word_index else "<unk>" for w in text.split()]
    assert words[1] == "<unk>" and words.count("<unk>") < 4
    assert scorer.token_scores([text]) == [list(scorer.adapter.charts.masked_log_probs(grammar.encode(words)))]


# ---- (f) training moves an LM towards the truth
@pytest.mark.slow
def test_more_training_raises_the_masked_lms_agreement_with_the_truth(tmp_path):
    import torch
    from safetensors import safe_open

    from rescorer.tasks import run_task

    from .test_cli import compose_config

    overrides = [f"task.grammar={FIXTURES / 'agreement.pcfg'}", "task.sizes={train: 3000, dev: 20, test: 100}",
                 "task.max_length=12", "task.min_frequency=1", "task.models=[masked]",
                 "task.masked.shape={layers: 2, heads: 2, hidden: 64, intermediate: 128, max_length: 12}",
                 "task.masked.steps=80", "task.masked.batch_size=64", "task.masked.lr=3e-3", "task.masked.warmup=5",
                 "task.masked.eval_every=80", "task.masked.dev_size=20", "engine.threads=1", "engine.progress=false",
                 f"out_dir={tmp_path}/run", f"engine.store={tmp_path}/store.sqlite"]
    threads = torch.get_num_threads()
    try:
        early = run_task(compose_config("task=pcfg", *overrides, "+task.masked.until=10"))["sets"]["masked"]
        late = run_task(compose_config("task=pcfg", *overrides))["sets"]["masked"]  # resumes at step 10
    finally:
        torch.set_num_threads(threads)
    assert (early["steps"], late["steps"]) == (10, 80)
    assert late["spearman"] > early["spearman"] + 0.15 and late["model_ppl"] < 0.8 * early["model_ppl"]
    assert early["pcfg_ppl"] == late["pcfg_ppl"] < late["model_ppl"]  # the grammar is the lower bound
    with safe_open(str(tmp_path / "run" / "masked" / "best" / "model.safetensors"), "pt") as saved:
        assert sum(".layer.1." in k for k in saved.keys()) > 0  # the trained model keeps all its layers
    assert (tmp_path / "run" / "agreement.png").exists() and (tmp_path / "run" / "report.json").exists()
