"""The one training loop: a run cut by ``until`` or the wall clock and resumed equals one run, the best
checkpoint is the best logged dev metric, limits stop where they should, and the causal LM's dev perplexity
through the scorer equals the hand-computed one."""
from __future__ import annotations

import ast
import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from rescorer.train import loop
from rescorer.train.batches import epoch_indices, list_batches, list_units, pad, stream_indices
from rescorer.train.causal import CausalConfig, train_causal
from rescorer.train.loop import Limits, Objective, optimise, train, warmup_linear
from rescorer.train.scratch import Shape, build_lm, word_tokenizer

REPO = Path(__file__).resolve().parents[1]


def sentences(n: int, seed: int) -> list[str]:
    """Sentences of a tiny language with structure to learn: a subject, its verb form, an object."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = rng.integers(4)
        words = [f"the n{k}", f"v{k}" if rng.random() < 0.9 else f"v{(k + 1) % 4}", "a", f"o{rng.integers(6)}"]
        out.append(" ".join(words))
    return out


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, list[str], list[str]]:
    """(a tiny random GPT-2 with dropout, training sentences, dev sentences)."""
    root = tmp_path_factory.mktemp("loop")
    train_texts, dev_texts = sentences(200, 0), sentences(24, 1)
    tokenizer = word_tokenizer(train_texts, causal=True)
    init = build_lm(tokenizer, Shape(layers=1, heads=2, hidden=32, intermediate=64, max_length=8), True, root / "init")
    return init, train_texts, dev_texts


class Clock:
    """A wall clock that only moves when a step ticks it."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


class Toy(Objective):
    """Next-word training of the tiny GPT-2 (AdamW, warm-up and decay, dropout on)."""

    name = "toy"
    select = ("dev_loss", "min")

    def __init__(self, init: Path, texts: list[str], dev: list[str], clock: Clock | None = None,
                 select: tuple[str, str] = ("dev_loss", "min")):
        self.init, self.texts, self.dev, self.clock, self.select, self.seen = init, texts, dev, clock, select, 0

    def setup(self, resume: Path | None) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(resume or self.init)
        self.model = AutoModelForCausalLM.from_pretrained(resume or self.init)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=3e-3)
        self.scheduler = warmup_linear(self.optimizer, 3, 12)

    def loss(self, texts: list[str]) -> torch.Tensor:
        tok = self.tokenizer
        rows = [[tok.bos_token_id, *ids, tok.eos_token_id] for ids in tok(texts, add_special_tokens=False)["input_ids"]]
        ids, mask = pad(rows, tok.pad_token_id)
        labels = torch.from_numpy(np.where(mask, ids, -100))
        return self.model(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask.astype(np.int64)),
                          labels=labels).loss

    def step(self, index: int) -> dict[str, float]:
        picked = stream_indices(index, len(self.texts), 16, seed=0)
        loss = self.loss([self.texts[i] for i in picked])
        optimise(self, loss)
        self.seen += len(picked)
        if self.clock:
            self.clock.now += 1.0
        return {"train_loss": float(loss.detach())}

    def evaluate(self) -> dict[str, float]:
        with torch.inference_mode():
            return {"dev_loss": float(self.loss(self.dev))}

    def counters(self, step: int) -> dict[str, float]:
        return {"seen": self.seen}

    def state_dict(self) -> dict:
        return {"seen": self.seen}

    def load_state_dict(self, state) -> None:
        self.seen = state["seen"]


def weights(out: Path, name: str = "last") -> dict[str, torch.Tensor]:
    return load_file(out / name / "model.safetensors")


def same(a, b) -> bool:
    """Equal as JSON (NaN equals NaN)."""
    return json.dumps(a) == json.dumps(b)


def test_a_run_cut_by_until_or_the_clock_and_resumed_equals_one_run(corpus, tmp_path, monkeypatch):
    init, texts, dev = corpus
    limits = Limits(steps=12, eval_every=4)
    once = train(Toy(init, texts, dev), limits, tmp_path / "once", progress=False)
    assert once["stopped"] == "steps" and [c["step"] for c in once["curve"]] == [0, 4, 8, 12]

    cut = train(Toy(init, texts, dev), Limits(steps=12, eval_every=4, until=6), tmp_path / "staged", progress=False)
    assert (cut["stopped"], cut["step"], len(cut["window"])) == ("until", 6, 2)  # steps 5 and 6 wait for step 8
    staged = train(Toy(init, texts, dev), limits, tmp_path / "staged", progress=False)

    clock = Clock()
    monkeypatch.setattr(loop, "time", SimpleNamespace(perf_counter=clock.perf_counter))
    timed = Limits(steps=12, eval_every=4, max_seconds=5.5)
    cut = train(Toy(init, texts, dev, clock), timed, tmp_path / "timed", progress=False)
    assert (cut["stopped"], cut["step"]) == ("time", 6)  # six one-second steps, then 6 s ≥ 5.5 s
    clock.now = 0.0
    resumed = train(Toy(init, texts, dev, clock), timed, tmp_path / "timed", progress=False)

    for run, out in ((staged, "staged"), (resumed, "timed")):
        assert run["step"] == 12 and [c["step"] for c in run["curve"]] == [0, 4, 8, 12]
        for a, b in zip(once["curve"], run["curve"]):
            assert a["seen"] == b["seen"]
            assert a["dev_loss"] == pytest.approx(b["dev_loss"], rel=1e-6)
            assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-6, nan_ok=True)
        one, two = weights(tmp_path / "once"), weights(tmp_path / out)
        for name in one:
            torch.testing.assert_close(one[name], two[name], rtol=1e-6, atol=1e-7)
    again = train(Toy(init, texts, dev), limits, tmp_path / "again", progress=False)
    assert same(again["curve"], once["curve"])  # deterministic: any drift above would come from the resume


def test_steps_differ_when_dropout_is_not_reseeded(corpus, tmp_path, monkeypatch):
    """The loop's per-step seed is what makes a resumed run equal: without it the dropout masks differ."""
    init, texts, dev = corpus
    reference = train(Toy(init, texts, dev), Limits(steps=4, eval_every=4), tmp_path / "a", progress=False)
    monkeypatch.setattr(torch, "manual_seed", lambda seed: None)
    torch.random.default_generator.manual_seed(12345)
    drifted = train(Toy(init, texts, dev), Limits(steps=4, eval_every=4), tmp_path / "b", progress=False)
    assert drifted["curve"][-1]["train_loss"] != reference["curve"][-1]["train_loss"]


@pytest.mark.parametrize("direction", ["min", "max"])
def test_the_best_checkpoint_is_the_best_logged_dev_metric(corpus, tmp_path, direction):
    init, texts, dev = corpus
    limits = Limits(steps=16, eval_every=2, patience=2 if direction == "max" else None)
    state = train(Toy(init, texts, dev, select=("dev_loss", direction)), limits, tmp_path, progress=False)
    logged = [c["dev_loss"] for c in state["curve"]]
    best = int(np.argmin(logged) if direction == "min" else np.argmax(logged))
    assert state["best_step"] == state["curve"][best]["step"]
    check = Toy(init, texts, dev)
    check.setup(tmp_path / "best")
    check.model.eval()
    assert check.evaluate()["dev_loss"] == pytest.approx(logged[best], rel=1e-6)
    if direction == "max":  # training lowers the dev loss: the untrained model is "best", patience ends the run
        assert best == 0 and state["stopped"] == "patience" and len(logged) == 1 + limits.patience
    else:
        assert state["stopped"] == "steps" and logged[best] < 0.9 * logged[0]


def test_limits_stop_where_they_should(corpus, tmp_path, monkeypatch):
    init, texts, dev = corpus
    state = train(Toy(init, texts, dev), Limits(steps=10, eval_every=4), tmp_path / "steps", progress=False)
    assert (state["stopped"], state["step"]) == ("steps", 10)
    assert [c["step"] for c in state["curve"]] == [0, 4, 8, 10]  # the last step is always evaluated
    again = train(Toy(init, texts, dev), Limits(steps=10, eval_every=4), tmp_path / "steps", progress=False)
    assert (again["stopped"], again["step"]) == ("steps", 10) and same(again["curve"], state["curve"])

    state = train(Toy(init, texts, dev), Limits(steps=10, eval_every=4, until=3), tmp_path / "until", progress=False)
    assert (state["stopped"], state["step"], [c["step"] for c in state["curve"]]) == ("until", 3, [0])

    state = train(Toy(init, texts, dev), Limits(steps=10, eval_every=4, max_seconds=0), tmp_path / "zero",
                  progress=False)
    assert (state["stopped"], state["step"], [c["step"] for c in state["curve"]]) == ("time", 0, [0])

    clock = Clock()
    monkeypatch.setattr(loop, "time", SimpleNamespace(perf_counter=clock.perf_counter))
    cut = Limits(steps=10, eval_every=4, max_seconds=6.5, record_at_stop=True)
    state = train(Toy(init, texts, dev, clock), cut, tmp_path / "record", progress=False)
    assert (state["stopped"], state["step"]) == ("time", 7)
    assert [c["step"] for c in state["curve"]] == [0, 4, 7] and state["window"] == []  # evaluated at the cut


def test_batches_cover_each_epoch_and_pad_rows():
    epoch = np.concatenate([epoch_indices(s, 10, 4, seed=3) for s in range(3)])
    assert sorted(epoch) == list(range(10)) and len(epoch_indices(2, 10, 4, seed=3)) == 2
    lists, loose = list_units(["a", "a", None, "b", "b", "b", None, None, "a", None], 3)
    assert [u.tolist() for u in lists] == [[0, 1, 8], [3, 4, 5]] and loose.tolist() == [2, 6, 7, 9]
    assert [u.tolist() for u in list_units(["c"] * 7, 3)[0]] == [[0, 1, 2], [3, 4], [5, 6]]  # a long list in parts
    batches = [list_batches(s, lists, loose, 3, seed=3).tolist() for s in range(4)]  # 2 lists + 4 loose in 2
    assert [0, 1, 8] in batches and [3, 4, 5] in batches  # whole lists, every example once an epoch
    assert sorted(sum(batches, [])) == list(range(10)) and sorted(map(len, batches)) == [1, 3, 3, 3]
    orders = {tuple(map(tuple, (list_batches(s, lists, loose, 3, seed=3).tolist() for s in range(4 * e, 4 * e + 4))))
              for e in range(6)}
    assert len(orders) > 1  # reshuffled each epoch
    stream = np.concatenate([stream_indices(s, 12, 4, seed=3) for s in range(3)])
    assert sorted(stream) == list(range(12)) and not np.array_equal(stream, stream_indices(3, 12, 12, seed=3))
    ids, mask = pad([[5, 6, 7], [8]], 0)
    assert ids.tolist() == [[5, 6, 7], [8, 0, 0]] and mask.tolist() == [[True] * 3, [True, False, False]]


def hand_dev_ppl(model_dir: Path, texts: list[str]) -> float:
    """The causal trainer's former dev perplexity: next-word cross-entropy summed over the words, the end token
    not counted, over [BOS] w_1 … w_n [EOS] rows padded together."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok, model = AutoTokenizer.from_pretrained(model_dir), AutoModelForCausalLM.from_pretrained(model_dir).eval()
    rows = [[tok.bos_token_id, *ids, tok.eos_token_id] for ids in tok(texts, add_special_tokens=False)["input_ids"]]
    ids, mask = pad(rows, tok.pad_token_id)
    target = torch.from_numpy(np.where(mask & (ids != tok.eos_token_id), ids, -100))[:, 1:]
    with torch.inference_mode():
        logits = model(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask.astype(np.int64))).logits
    nll = torch.nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), target, reduction="sum")
    return math.exp(float(nll) / int((target != -100).sum()))


def test_causal_dev_perplexity_through_the_scorer_equals_the_hand_computed_one(corpus, tmp_path):
    init, texts, dev = corpus
    cfg = CausalConfig(init=str(init), out_dir=str(tmp_path), steps=8, batch_size=16, lr=3e-3, warmup=2,
                       eval_every=4, max_length=8, device="cpu", progress=False)
    state = train_causal(cfg, texts, dev)
    assert [c["step"] for c in state["curve"]] == [0, 4, 8] and state["curve"][-1]["tokens"] == 8 * 16 * 7
    assert state["curve"][0]["dev_ppl"] == pytest.approx(hand_dev_ppl(init, dev), rel=1e-6)
    assert state["curve"][-1]["dev_ppl"] == pytest.approx(hand_dev_ppl(tmp_path / "last", dev), rel=1e-6)
    assert state["curve"][-1]["dev_ppl"] < 0.7 * state["curve"][0]["dev_ppl"]
    logged = [c["dev_ppl"] for c in state["curve"]]
    assert state["best_step"] == state["curve"][int(np.argmin(logged))]["step"]


def imported(path: Path) -> list[str]:
    """Absolute names of the modules a file of ``rescorer/pcfg`` imports."""
    prefix = {0: "", 1: "rescorer.pcfg.", 2: "rescorer."}
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            names.append(prefix[node.level] + (node.module or ""))
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
    return names


def test_pcfg_imports_no_training_scoring_or_engine_code():
    files = sorted((REPO / "rescorer" / "pcfg").glob("*.py"))
    assert "rescorer.errors" in imported(REPO / "rescorer" / "pcfg" / "grammar.py")
    for path in files:
        for name in imported(path):
            assert name.split(".")[:2] not in [["rescorer", m] for m in ("train", "scorers", "engine", "tasks")], \
                f"{path.name} imports {name}"


def test_a_training_resumes_only_with_the_options_it_was_started_with(tmp_path):
    """A later stage may run longer or elsewhere; one with another rate or other data would mix two trainings in
    one checkpoint, and is refused naming what differs."""
    from rescorer.errors import ConfigError
    from rescorer.train.loop import start_run

    first = {"lr": 1e-4, "epochs": 3, "texts": 2703, "max_seconds": 60, "engine": {"threads": 1}}
    start_run(tmp_path, first)
    start_run(tmp_path, {**first, "lr": 2e-4})  # nothing saved yet: a new start
    (tmp_path / "last").mkdir()
    start_run(tmp_path, {**first, "lr": 2e-4, "epochs": 5, "max_seconds": 600, "engine": {"threads": 2}})
    for changed, shown in (({"lr": 1e-4}, "lr: 0.0002 → 0.0001"), ({"texts": 810}, "texts: 2703 → 810")):
        with pytest.raises(ConfigError, match=f"other options \\({next(iter(changed))}; {shown}\\)"):
            start_run(tmp_path, {**first, "lr": 2e-4, **changed})
