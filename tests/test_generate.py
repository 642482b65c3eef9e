"""``rescorer.io.nbest_from_generate`` turns ``model.generate`` beam output into an NBest — tiny random
Whisper and Marian models built from configs (nothing downloaded): texts decoded as generate's tokenizer decodes them,
``score`` = ``sequences_scores`` and ``logprob`` = the summed transition scores, to 1e-5; and the recipe script."""
from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import transformers as tf

import rescorer
from rescorer.io import nbest_from_generate

from .conftest import ROOT
from .seq2seq_models import build_marian, build_whisper

K = 4
SOURCES = ["a man said to the universe", "sir i exist", "the house is small"]


@pytest.fixture(scope="module")
def whisper(tmp_path_factory):
    return build_whisper(tmp_path_factory.mktemp("whisper") / "model")


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    return build_marian(tmp_path_factory.mktemp("marian") / "model")


def beam(model, **inputs):
    return model.generate(**inputs, num_beams=K, num_return_sequences=K, output_scores=True,
                          return_dict_in_generate=True, max_new_tokens=8)


def check(nbest, outputs, tokenizer, model, ids):
    """Every hypothesis as generate returned it: text, sequences_scores, and the summed transition scores."""
    texts = tokenizer.batch_decode(outputs.sequences, skip_special_tokens=True)
    sums = model.compute_transition_scores(outputs.sequences, outputs.scores, outputs.beam_indices).sum(-1)
    assert [u.id for u in nbest] == ids and all(len(u.hyps) == K for u in nbest)
    hyps = [h for u in nbest for h in u.hyps]
    assert [h.text for h in hyps] == [t.strip() for t in texts]
    np.testing.assert_allclose([h.scores["score"] for h in hyps], outputs.sequences_scores.tolist(), atol=1e-5)
    np.testing.assert_allclose([h.scores["logprob"] for h in hyps], sums.tolist(), atol=1e-5)
    lengths = (outputs.beam_indices >= 0).sum(-1)  # beam search ranked by sum / length (length_penalty 1)
    np.testing.assert_allclose((sums / lengths).tolist(), [h.scores["score"] for h in hyps], atol=1e-5)


def test_marian_beam_nbest(marian):
    tokenizer, model = tf.MarianTokenizer.from_pretrained(marian), tf.MarianMTModel.from_pretrained(marian).eval()
    outputs = beam(model, **tokenizer(SOURCES, return_tensors="pt", padding=True))
    nbest = nbest_from_generate(outputs, tokenizer, K, refs=["r1", "r2", "r3"])
    check(nbest, outputs, tokenizer, model, ["0", "1", "2"])
    assert nbest.refs() == ["r1", "r2", "r3"] and nbest.columns == ["score", "logprob"]
    assert len({h.text for h in nbest.utterances[0].hyps}) > 1  # a real N-best, not one hypothesis k times


def test_marian_greedy_has_the_summed_log_probs_up_to_eos(marian):
    tokenizer, model = tf.MarianTokenizer.from_pretrained(marian), tf.MarianMTModel.from_pretrained(marian).eval()
    outputs = model.generate(**tokenizer(SOURCES, return_tensors="pt", padding=True), do_sample=False,
                             output_scores=True, return_dict_in_generate=True, max_new_tokens=8)
    nbest = nbest_from_generate(outputs, tokenizer, 1)
    steps = model.compute_transition_scores(outputs.sequences, outputs.scores)
    generated = outputs.sequences[:, -steps.shape[1]:]
    ended = (generated == tokenizer.eos_token_id).int().cumsum(-1)
    upto_eos = torch.where((ended == 0) | ((ended == 1) & (generated == tokenizer.eos_token_id)), steps, 0).sum(-1)
    assert nbest.columns == ["logprob"]
    np.testing.assert_allclose([u.hyps[0].scores["logprob"] for u in nbest], upto_eos.tolist(), atol=1e-5)


def test_whisper_beam_nbest(whisper):
    processor = tf.WhisperProcessor.from_pretrained(whisper)
    model = tf.WhisperForConditionalGeneration.from_pretrained(whisper).eval()
    audio = [np.random.default_rng(seed).standard_normal(16000).astype(np.float32) * 0.1 for seed in range(2)]
    features = processor(audio, sampling_rate=16000, return_tensors="pt").input_features

    # Whisper's own generate repeats each input for num_return_sequences (its best beam k times), and returns each
    # sequence's scores gathered along its beam already
    own = beam(model, input_features=features)
    mine = nbest_from_generate(own, processor.tokenizer, K)
    texts = processor.tokenizer.batch_decode(own.sequences, skip_special_tokens=True)
    assert [h.text for u in mine for h in u.hyps] == [t.strip() for t in texts]
    np.testing.assert_allclose([h.scores["score"] for u in mine for h in u.hyps], own.sequences_scores.tolist(), atol=1e-5)

    # the generic beam search from the same decoder prompt: a real N-best, and its best path is Whisper's
    prompt = own.sequences[::K, : own.sequences.shape[1] - int((own.beam_indices >= 0).sum(-1).max())]
    generic = tf.GenerationMixin.generate(model, input_features=features, decoder_input_ids=prompt, num_beams=K,
                                          num_return_sequences=K, output_scores=True, return_dict_in_generate=True,
                                          max_new_tokens=8)
    nbest = nbest_from_generate(generic, processor.tokenizer, ids=["utt-a", "utt-b"])
    check(nbest, generic, processor.tokenizer, model, ["utt-a", "utt-b"])
    for u, alone in zip(nbest, mine):
        assert u.hyps[0].text == alone.hyps[0].text
        assert u.hyps[0].scores == pytest.approx(alone.hyps[0].scores, abs=1e-5)


def test_wrong_grouping_is_one_clear_error(marian):
    tokenizer, model = tf.MarianTokenizer.from_pretrained(marian), tf.MarianMTModel.from_pretrained(marian).eval()
    outputs = beam(model, **tokenizer(SOURCES, return_tensors="pt", padding=True))
    with pytest.raises(rescorer.ConfigError, match="12 sequences are not 5 per input"):
        nbest_from_generate(outputs, tokenizer, 5)
    with pytest.raises(rescorer.ConfigError, match="3 inputs generated, but 2 ids"):
        nbest_from_generate(outputs, tokenizer, K, ids=["a", "b"])


@pytest.mark.slow
def test_recipe_script_writes_a_list_rescorer_reads(marian, whisper, tmp_path):
    from scipy.io import wavfile

    script = ROOT / "recipes" / "hf_generate" / "generate_nbest.py"
    (tmp_path / "src.txt").write_text("\n".join(SOURCES) + "\n")
    audio = tmp_path / "wav"
    audio.mkdir()
    for name in ("spk1-utt1", "spk1-utt2"):
        wavfile.write(audio / f"{name}.wav", 16000, (np.random.default_rng(1).standard_normal(16000) * 3000).astype(np.int16))
    for model, inputs, ids in ((marian, tmp_path / "src.txt", ["0", "1", "2"]), (whisper, audio, ["spk1-utt1", "spk1-utt2"])):
        out = tmp_path / f"{model.parent.name}.jsonl"
        run = subprocess.run([sys.executable, str(script), str(model), str(inputs), str(out), "--beams", "3",
                              "--max-new-tokens", "6", "--batch", "2"], capture_output=True, text=True, timeout=300,
                             env={"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
                                  "PATH": "/usr/bin:/bin"})
        assert run.returncode == 0, run.stderr
        nbest = rescorer.read_nbest(out)
        assert [u.id for u in nbest] == ids and {len(u.hyps) for u in nbest} == {3}
        assert nbest.columns == ["score", "logprob"]
        assert all(u.hyps[0].scores["score"] >= u.hyps[-1].scores["score"] for u in nbest)


# ---------------------------------------------------------------- inconsistent generate output is one clear error
@pytest.fixture(scope="module")
def marian_beams(marian):
    tokenizer, model = tf.MarianTokenizer.from_pretrained(marian), tf.MarianMTModel.from_pretrained(marian).eval()
    return tokenizer, model, beam(model, **tokenizer(SOURCES, return_tensors="pt", padding=True))


def edited(outputs, **changes):
    """A copy of generate's output with some tensors replaced (the others cloned)."""
    fields = {name: getattr(outputs, name) for name in ("sequences", "sequences_scores", "scores", "beam_indices")}
    fields = {name: value if name == "scores" else value.clone() for name, value in fields.items()}
    return SimpleNamespace(**{**fields, **changes})


def test_one_beam_index_past_the_score_rows_is_refused_not_read_as_whisper(marian_beams):
    tokenizer, model, outputs = marian_beams
    beams = outputs.beam_indices.clone()
    rows = outputs.scores[0].shape[0]
    beams[1, 0] = rows + 87
    with pytest.raises(rescorer.ConfigError, match=rf"beam_indices\[1\]\[0\] is {rows + 87}, past the {rows} score "
                                                   "rows") as info:
        nbest_from_generate(edited(outputs, beam_indices=beams), tokenizer, K)
    assert "\n" not in str(info.value)
    sums = model.compute_transition_scores(outputs.sequences, outputs.scores, outputs.beam_indices).sum(-1)
    untouched = nbest_from_generate(edited(outputs), tokenizer, K)
    np.testing.assert_allclose([h.scores["logprob"] for u in untouched for h in u.hyps], sums.tolist(), atol=1e-5)


def test_a_negative_beam_index_inside_a_path_is_refused(marian_beams):
    tokenizer, _, outputs = marian_beams
    beams = outputs.beam_indices.clone()
    beams[0, 0] = -2
    with pytest.raises(rescorer.ConfigError, match=r"beam_indices\[0\] holds a negative index"):
        nbest_from_generate(edited(outputs, beam_indices=beams), tokenizer, K)


def test_sequences_shorter_than_the_score_steps_are_refused(marian_beams):
    tokenizer, _, outputs = marian_beams
    steps = len(outputs.scores)
    with pytest.raises(rescorer.ConfigError, match=rf"{steps} generated steps, but {steps} score steps and "
                                                   "sequences of 3 tokens"):
        nbest_from_generate(edited(outputs, sequences=outputs.sequences[:, :3].clone()), tokenizer, K)


def test_a_token_outside_the_vocabulary_is_refused(marian_beams):
    tokenizer, _, outputs = marian_beams
    sequences = outputs.sequences.clone()
    vocab = outputs.scores[0].shape[-1]
    sequences[2, -1] = vocab + 3
    with pytest.raises(rescorer.ConfigError, match=rf"sequence 2 has token {vocab + 3} at step"):
        nbest_from_generate(edited(outputs, sequences=sequences), tokenizer, K)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_nan_or_infinite_sequence_score_is_refused(marian_beams, bad):
    tokenizer, _, outputs = marian_beams
    scores = outputs.sequences_scores.clone()
    scores[5] = bad
    with pytest.raises(rescorer.ConfigError, match=rf"score \(sequences_scores\) of sequence 5 is {bad}"):
        nbest_from_generate(edited(outputs, sequences_scores=scores), tokenizer, K)


def test_a_minus_infinite_sequence_score_is_kept_and_reads_back(marian_beams, tmp_path):
    tokenizer, _, outputs = marian_beams
    scores = outputs.sequences_scores.clone()
    scores[5] = -float("inf")
    nbest = nbest_from_generate(edited(outputs, sequences_scores=scores), tokenizer, K)
    rescorer.write_nbest(nbest, tmp_path / "nbest.jsonl")
    back = rescorer.read_nbest(tmp_path / "nbest.jsonl")
    assert [h.scores["score"] for u in back for h in u.hyps] == pytest.approx(scores.tolist())
