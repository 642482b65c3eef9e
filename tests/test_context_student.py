"""A student that reads the previous utterances' 1-bests with each hypothesis: its inputs, its score's dependence on
the context (and only on the K utterances it learnt with), and its spec and signature."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import rescorer
from rescorer.context import conditional
from rescorer.errors import ConfigError
from rescorer.pipeline.scoring import score_nbest
from rescorer.scorers.student import student_inputs
from rescorer.types import Hypothesis, NBest, Utterance

from .conftest import needs_minilm

pytestmark = needs_minilm


@pytest.fixture(scope="module")
def context_student(tmp_path_factory):
    """The shipped student, recorded as one that reads the previous utterance's 1-best (K = 1, 16 tokens)."""
    shipped = rescorer.shipped.student("student_mse")
    out = tmp_path_factory.mktemp("context_student")
    for path in shipped.iterdir():
        shutil.copyfile(path, out / path.name)
    config = json.loads((out / "config.json").read_text())
    config["rescorer_student"]["context"] = {"utterances": 1, "tokens": 16, "source": "first_pass", "group": None,
                                             "following": 0}
    (out / "config.json").write_text(json.dumps(config))
    return out


def recording(firsts: list[str]) -> NBest:
    """One recording ``spk-ch``: an utterance per 1-best given, each with that 1-best and one fixed alternative."""
    return NBest([Utterance(f"spk-ch-{i}", (Hypothesis(text, {"score": -1.0}),
                                             Hypothesis("the same words every time", {"score": -2.0})))
                  for i, text in enumerate(firsts)])


def scores(scorer, nbest: NBest) -> np.ndarray:
    bound = {"student": scorer}
    return np.asarray(score_nbest(nbest, bound)[1]["student"].totals).reshape(len(nbest), 2)


def test_the_hypothesis_is_the_second_text_of_a_pair_after_the_contexts_last_tokens(context_student):
    tokenizer = rescorer.load_scorer("student", str(context_student), store=None).adapter.tokenizer
    (ids, scored, prefix), (alone, scored_alone, no_prefix) = student_inputs(
        tokenizer, [conditional("one two three four five six", "a dog barked"), "a dog barked"], 3)
    words = tokenizer.convert_ids_to_tokens(ids.tolist())
    assert words == ["[CLS]", "four", "five", "six", "[SEP]", "a", "dog", "barked", "[SEP]"]
    assert [words[i] for i in scored] == ["a", "dog", "barked"]
    assert words[:prefix] == ["[CLS]", "four", "five", "six", "[SEP]"]
    assert tokenizer.convert_ids_to_tokens(alone.tolist()) == ["[CLS]", "a", "dog", "barked", "[SEP]"]
    assert scored_alone.tolist() == [1, 2, 3] and no_prefix == 0


def test_hypotheses_after_one_context_share_a_row_and_score_as_each_read_alone(context_student):
    """One row reads the context once and each hypothesis after it; each total equals a naive forward pass of that
    pair alone, its context attending only to itself, read at the hypothesis's last token."""
    import torch

    scorer = rescorer.load_scorer("student", str(context_student), store=None)
    student = scorer.adapter
    texts = scorer.normalise([conditional("he went to the market", hypothesis) for hypothesis in
                              ["and bought some bread", "and bought sum bred", "an bought", "bread"]])
    assert student.pool(student.prepare_all(texts)).rows == 1
    totals = scorer.compute(texts, normalise=False).totals
    mean, std = student.info["mean"], student.info["std"]
    for text, total in zip(texts, totals):
        ids, scored, prefix = student_inputs(student.tokenizer, [text], 16)[0]
        context = torch.arange(len(ids)) < prefix
        sees = context[None, :] | ~context[:, None]  # the context sees itself, the hypothesis everything
        with torch.inference_mode():
            out = student.model(input_ids=torch.from_numpy(ids)[None], attention_mask=sees[None, None]).logits[0, :, 0]
        assert total == pytest.approx(float(out[-1] * std + mean) * len(scored), rel=1e-5)


def test_the_score_depends_on_the_previous_utterances_1_best_and_only_within_k(context_student):
    scorer = rescorer.load_scorer("student", str(context_student), store=None)
    first = scores(scorer, recording(["he went to the market", "and bought some bread", "then he walked home"]))
    other = scores(scorer, recording(["she sang a quiet song", "and bought some bread", "then he walked home"]))
    # a first utterance has no context: its score is the hypothesis's alone, whatever follows
    assert first[0, 1] == other[0, 1] == pytest.approx(scorer.score(["the same words every time"])[0], abs=1e-4)
    # the second reads the first's 1-best: a different one changes its scores
    assert np.abs(first[1] - other[1]).min() > 1e-3
    # the third reads only the second (K = 1), the same in both lists
    np.testing.assert_allclose(first[2], other[2], atol=1e-5)


def test_its_spec_and_signature_record_the_context_it_learnt_with(context_student):
    scorer = rescorer.load_scorer("student", str(context_student), store=None)
    assert (scorer.context.utterances, scorer.context.tokens) == (1, 16)
    assert "1/16/first_pass" in scorer.signature
    plain = rescorer.load_scorer("student", str(rescorer.shipped.student("student_mse")), store=None)
    assert "first_pass" not in plain.signature
    regrouped = rescorer.load_scorer("student", str(context_student), context={"group": "^(.*)-"}, store=None)
    assert regrouped.context.group == "^(.*)-"


@pytest.mark.parametrize("options", [{"utterances": 3}, {"utterances": 1, "tokens": 64}])
def test_another_amount_of_context_than_learnt_is_one_line(context_student, options):
    with pytest.raises(ConfigError, match="learnt with 1 utterances, 16 tokens; leave context unset"):
        rescorer.load_scorer("student", str(context_student), context=options, store=None)
