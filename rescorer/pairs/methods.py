"""Acceptability judgments of minimal pairs: each method gives both sentences of a pair a score,
and is correct on the pair when score(good) > score(bad).

| method | the score of a sentence S |
|---|---|
| ``lp``, ``mean_lp``, ``pen_lp`` | LL(S) (PLL(S) for a masked LM), LP/|S|, LP/((5+|S|)/6)^α; |S|: scored tokens |
| ``template_lp``, ``template_mean_lp``, ``template_pen_lp`` | the same of the whole string S makes in a template |
| ``template_compar_lp`` | LP of a comparative template with S first and the other sentence second |
| ``yes_no`` | P(Yes) / (P(Yes) + P(No)) of the next token after a prompt asking whether S is acceptable |
| ``ab`` | log P(S's letter) of the next token after a prompt showing both sentences as A and B |

Each template (five per method) is a separate judgment; an ensemble such as ``L2:P3`` is the majority vote of
five judgments: two in-template-LP templates and three Yes/No prompts. Template 1 of each method is Ide et
al.'s (Tables 1–2); templates 2–5 are our paraphrases in the same style (the paper's own are in its repository;
pass any list to ``Judge``).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ..engine import BoundScorer
from ..errors import ConfigError, UnknownNameError
from .data import Pair

ALPHA = 0.8
SINGLE_TEMPLATES = (
    "The following sentence is grammatically acceptable.\n\n{sentence}",
    "Here is a grammatically correct sentence.\n\n{sentence}",
    "The sentence below follows the rules of English grammar.\n\n{sentence}",
    "This is an example of a well-formed English sentence.\n\n{sentence}",
    "A native speaker would accept the following sentence as grammatical.\n\n{sentence}",
)
COMPARATIVE_TEMPLATES = (
    "The following sentence A is grammatically acceptable while B is not.\n\nA: {sentence}\nB: {other}",
    "Of the two sentences below, A is grammatically correct and B is not.\n\nA: {sentence}\nB: {other}",
    "Sentence A follows the rules of English grammar, but sentence B does not.\n\nA: {sentence}\nB: {other}",
    "Only the first of these two sentences is well-formed English.\n\nA: {sentence}\nB: {other}",
    "A native speaker would accept sentence A and reject sentence B.\n\nA: {sentence}\nB: {other}",
)


@dataclass(frozen=True)
class Prompt:
    """A system message and a user message with placeholders: ``{sentence}`` (Yes/No) or ``{a}``, ``{b}`` (A/B)."""

    system: str
    user: str


YES_NO_SYSTEM = "Your task is to evaluate the quality of given text."
YES_NO_PROMPTS = tuple(Prompt(YES_NO_SYSTEM, user) for user in (
    "Is the following sentence grammatically acceptable? Respond with Yes or No as your answer.\n\n{sentence}",
    "Is this sentence grammatically correct? Answer Yes or No.\n\n{sentence}",
    "Does the following sentence follow the rules of English grammar? Respond with Yes or No as your "
    "answer.\n\n{sentence}",
    "Would a native speaker of English accept the sentence below as grammatical? Answer Yes or No.\n\n{sentence}",
    "Read the following sentence. Is it well-formed English? Respond with Yes or No as your answer.\n\n{sentence}",
))
AB_SYSTEM = "Your task is to compare the quality of given sentences."
AB_PROMPTS = tuple(Prompt(AB_SYSTEM, user) for user in (
    "One of the following sentences is grammatically acceptable and the other is not. Which one is "
    "acceptable? Respond with A or B as your answer.\n\nA: {a}\nB: {b}",
    "Which of these two sentences is grammatically correct? Answer A or B.\n\nA: {a}\nB: {b}",
    "Only one of the sentences below follows the rules of English grammar. Which one? Respond with A or B "
    "as your answer.\n\nA: {a}\nB: {b}",
    "A native speaker of English would accept one of these sentences and reject the other. Which one would "
    "they accept? Answer A or B.\n\nA: {a}\nB: {b}",
    "Read the following two sentences. Which one is well-formed English? Respond with A or B as your "
    "answer.\n\nA: {a}\nB: {b}",
))
YES_NO_ANSWERS = ("Yes", "No")
AB_ANSWERS = ("A", "B")
STYLES = ("auto", "chat", "base")

# How a sentence's readout becomes its score, per method: (readout, measure).
METHODS: dict[str, tuple[str, str]] = {
    "lp": ("sentence", "lp"), "mean_lp": ("sentence", "mean"), "pen_lp": ("sentence", "pen"),
    "template_lp": ("template", "lp"), "template_mean_lp": ("template", "mean"), "template_pen_lp": ("template", "pen"),
    "template_compar_lp": ("comparative", "lp"), "yes_no": ("yes_no", "p_yes"), "ab": ("ab", "logp"),
}
NEEDS_CAUSAL = ("yes_no", "ab")  # next-token probabilities: causal LMs only
ENSEMBLE_LETTERS = {"L": "template_lp", "P": "yes_no"}


@dataclass
class Judgments:
    """One method's verdicts on N pairs under each of its T templates (T = 1 without templates)."""

    method: str
    labels: list[str]                 # one per template (or per ensemble trial)
    correct: np.ndarray               # [T, N] bool
    good: np.ndarray | None = None    # [T, N] scores (None for an ensemble)
    bad: np.ndarray | None = None
    seconds: float = 0.0              # wall time of the scoring it needed
    rows: int = 0                     # model rows computed (0: every score came from the store)
    details: dict[str, np.ndarray] = field(default_factory=dict)  # per-pair extras (A/B: good_is_a)


@dataclass(frozen=True)
class Readout:
    scores: np.ndarray   # [T, 2, N]: good then bad
    lengths: np.ndarray  # [T, 2, N] scored tokens (of the whole templated string)
    seconds: float
    rows: int
    details: Mapping[str, np.ndarray] = field(default_factory=dict)


def fill(template: str, **fields: str) -> str:
    """``template`` with each ``{name}`` replaced by ``fields[name]`` in one pass (sentences may contain braces)."""
    for name in fields:
        if "{" + name + "}" not in template:
            raise ConfigError(f"template {template!r} has no {{{name}}} placeholder")
    return re.sub(r"\{(" + "|".join(map(re.escape, fields)) + r")\}", lambda m: fields[m.group(1)], template)


def prompt_style(style: str, tokenizer: Any) -> str:
    """``chat`` (the tokenizer's chat template, for instruct models) or ``base`` (system + user + "\\nAnswer:")."""
    if style not in STYLES:
        raise ConfigError(f"prompt style must be one of {', '.join(STYLES)}, not {style!r}")
    has_chat = bool(getattr(tokenizer, "chat_template", None))
    if style == "chat" and not has_chat:
        raise ConfigError("prompt style 'chat' needs a tokenizer with a chat template; use 'base'")
    return ("chat" if has_chat else "base") if style == "auto" else style


def render(prompt: Prompt, style: str, tokenizer: Any = None, **fields: str) -> str:
    """The exact model input: the chat template with a generation prompt, or "{system} {user}\\nAnswer:"."""
    user = fill(prompt.user, **fields)
    if style == "base":
        return f"{prompt.system} {user}\nAnswer:"
    from jinja2.exceptions import TemplateError

    messages = [{"role": "system", "content": prompt.system}, {"role": "user", "content": user}]
    try:
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    except TemplateError:  # a chat template without a system role: one user message, as Ide et al. do
        merged = [{"role": "user", "content": f"{prompt.system} {user}"}]
        return tokenizer.apply_chat_template(merged, tokenize=False, add_generation_prompt=True)


def answers(words: Sequence[str], style: str) -> list[str]:
    """The answer tokens: the bare word after a chat template's assistant header, " word" after "Answer:"."""
    return [w if style == "chat" else f" {w}" for w in words]


def ab_order(groups: Sequence[str], seed: int) -> np.ndarray:
    """True where the acceptable sentence is shown as A: half of each group's pairs (an odd one out by the
    seed), placed at random with ``seed``."""
    rng = np.random.default_rng(seed)
    groups = np.asarray(groups, dtype=object)
    first = np.zeros(len(groups), dtype=bool)
    for group in dict.fromkeys(groups):
        members = np.flatnonzero(groups == group)
        take = len(members) // 2 + int(len(members) % 2 == 1 and rng.random() < 0.5)
        first[rng.choice(members, take, replace=False)] = True
    return first


def parse_ensemble(spec: str) -> dict[str, int]:
    """``"L2:P3"`` → {template_lp: 2, yes_no: 3}: letters L (in-template LP) and P (Yes/No), an odd total."""
    counts: dict[str, int] = {}
    for part in str(spec).split(":"):
        match = re.fullmatch(r"([A-Z])(\d+)", part.strip())
        if not match or match.group(1) not in ENSEMBLE_LETTERS:
            raise ConfigError(f"ensemble {spec!r}: each part is a letter ({', '.join(ENSEMBLE_LETTERS)}) and a "
                              f"count, e.g. 'L2:P3', not {part!r}")
        method = ENSEMBLE_LETTERS[match.group(1)]
        counts[method] = counts.get(method, 0) + int(match.group(2))
    total = sum(counts.values())
    if total % 2 == 0:
        raise ConfigError(f"ensemble {spec!r}: a majority vote needs an odd number of judgments, not {total}")
    return {method: k for method, k in counts.items() if k}


def majority(votes: np.ndarray) -> np.ndarray:
    """Correct where more than half of the judgments (rows of ``votes``) are correct."""
    votes = np.asarray(votes, dtype=bool)
    return 2 * votes.sum(axis=0) > votes.shape[0]


def ensemble(spec: str, members: Mapping[str, Judgments], trials: int = 10, seed: int = 0) -> Judgments:
    """Majority votes of judgments drawn without replacement from each member's templates, ``trials`` times."""
    counts = parse_ensemble(spec)
    for method, k in counts.items():
        if k > len(members[method].labels):
            raise ConfigError(f"ensemble {spec!r} wants {k} {method} judgments; there are "
                              f"{len(members[method].labels)} templates")
    rng = np.random.default_rng(seed)
    votes = [majority(np.concatenate([members[m].correct[rng.choice(len(members[m].labels), k, replace=False)]
                                      for m, k in counts.items()])) for _ in range(trials)]
    return Judgments(f"ensemble[{spec}]", [f"trial {t + 1}" for t in range(trials)], np.stack(votes),
                     seconds=sum(members[m].seconds for m in counts), rows=sum(members[m].rows for m in counts))


class Judge:
    """Every method for one scorer over one list of pairs; methods that share a readout score it once."""

    def __init__(self, scorer: BoundScorer, pairs: Sequence[Pair], *, templates: Sequence[str] = SINGLE_TEMPLATES,
                 comparative: Sequence[str] = COMPARATIVE_TEMPLATES, yes_no: Sequence[Prompt] = YES_NO_PROMPTS,
                 ab: Sequence[Prompt] = AB_PROMPTS, alpha: float = ALPHA, style: str = "auto", seed: int = 0):
        self.scorer, self.pairs, self.alpha, self.seed = scorer, list(pairs), alpha, seed
        self.good = scorer.normalise([p.good for p in self.pairs])
        self.bad = scorer.normalise([p.bad for p in self.pairs])
        self.templates, self.comparative = list(templates), list(comparative)
        self.yes_no_prompts = [p if isinstance(p, Prompt) else Prompt(**p) for p in yes_no]
        self.ab_prompts = [p if isinstance(p, Prompt) else Prompt(**p) for p in ab]
        self.style = prompt_style(style, scorer.tokenizer)
        self._readouts: dict[str, Readout] = {}

    def __call__(self, method: str) -> Judgments:
        if method not in METHODS:
            raise UnknownNameError("minimal-pair method", method, METHODS)
        source, measure = METHODS[method]
        readout = self.readout(source)
        scores = self.measure(readout, measure)
        count = len(scores)
        labels = [""] if count == 1 else [str(t + 1) for t in range(count)]
        return Judgments(method, labels, scores[:, 0] > scores[:, 1], scores[:, 0], scores[:, 1], readout.seconds,
                         readout.rows, dict(readout.details))

    def ensemble(self, spec: str, trials: int = 10) -> Judgments:
        return ensemble(spec, {m: self(m) for m in parse_ensemble(spec)}, trials, self.seed)

    def token_lengths(self) -> np.ndarray:
        """[2, N] scored tokens of the good and the bad sentence: |S| of MeanLP and PenLP (with EOS when the
        scorer scores it)."""
        return np.array([self.scorer.adapter.scored_tokens(side) for side in (self.good, self.bad)])

    def measure(self, readout: Readout, measure: str) -> np.ndarray:
        if measure == "mean":
            return readout.scores / readout.lengths
        if measure == "pen":
            return readout.scores / ((5 + readout.lengths) / 6) ** self.alpha
        return readout.scores

    def readout(self, source: str) -> Readout:
        if source not in self._readouts:
            self._readouts[source] = getattr(self, f"_{source}")()
        return self._readouts[source]

    # ---- readouts: [T, 2, N] scores of the good and the bad sentence under each template
    def _sentence(self) -> Readout:
        return self._log_probs([[*self.good, *self.bad]])

    def _template(self) -> Readout:
        return self._log_probs([[fill(t, sentence=s) for s in (*self.good, *self.bad)] for t in self.templates])

    def _comparative(self) -> Readout:
        return self._log_probs([[*(fill(t, sentence=g, other=b) for g, b in zip(self.good, self.bad)),
                                 *(fill(t, sentence=b, other=g) for g, b in zip(self.good, self.bad))]
                                for t in self.comparative])

    def _yes_no(self) -> Readout:
        prompts = [[render(p, self.style, self.scorer.tokenizer, sentence=s) for s in (*self.good, *self.bad)]
                   for p in self.yes_no_prompts]
        logp, seconds, rows = self._next_token(prompts, YES_NO_ANSWERS, "yes_no")
        p_yes = 1.0 / (1.0 + np.exp(logp[..., 1].astype(np.float64) - logp[..., 0]))
        return Readout(p_yes.reshape(len(prompts), 2, -1), np.zeros(0), seconds, rows)

    def _ab(self) -> Readout:
        good_is_a = ab_order([p.paradigm for p in self.pairs], self.seed)
        shown = [(g, b) if first else (b, g) for g, b, first in zip(self.good, self.bad, good_is_a)]
        prompts = [[render(p, self.style, self.scorer.tokenizer, a=a, b=b) for a, b in shown] for p in self.ab_prompts]
        logp, seconds, rows = self._next_token(prompts, AB_ANSWERS, "ab")
        logp = logp.reshape(len(prompts), len(self.pairs), 2)
        good = np.where(good_is_a, logp[..., 0], logp[..., 1])
        bad = np.where(good_is_a, logp[..., 1], logp[..., 0])
        return Readout(np.stack([good, bad], axis=1), np.zeros(0), seconds, rows, {"good_is_a": good_is_a})

    def _log_probs(self, texts: list[list[str]]) -> Readout:
        start = time.perf_counter()
        results = self.scorer.compute([t for group in texts for t in group], normalise=False)
        shape = (len(texts), 2, len(self.pairs))
        scores = np.array(results.totals).reshape(shape)
        lengths = np.array([len(tokens) for tokens in results.tokens]).reshape(shape)
        return Readout(scores, lengths, time.perf_counter() - start, results.stats.rows_computed)

    def _next_token(self, prompts: list[list[str]], words: Sequence[str], method: str) -> tuple[np.ndarray, float, int]:
        if not hasattr(self.scorer.adapter, "next_token"):
            raise ConfigError(f"method {method!r} reads next-token probabilities: it needs a causal LM "
                              f"(scorer kind ll), not {self.scorer.kind!r}")
        start = time.perf_counter()
        flat = [p for group in prompts for p in group]
        view = self.scorer.view(self.scorer.adapter.next_token(answers(words, self.style), self.style == "base"))
        results = view.compute(flat, normalise=False)
        logp = np.array(results.tokens).reshape(len(flat), -1)
        return logp, time.perf_counter() - start, results.stats.rows_computed
