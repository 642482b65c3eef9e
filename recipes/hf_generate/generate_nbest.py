#!/usr/bin/env python
"""Beam-search N-best lists from any Hugging Face ASR or MT model directory, as canonical JSONL for rescorer.

    python recipes/hf_generate/generate_nbest.py MODEL_DIR INPUTS OUT.jsonl [--beams 10] [--batch 8] ...

MODEL_DIR: a seq2seq checkpoint (``save_pretrained`` layout; a hub name works when online). ASR models
(Whisper, Speech2Text, …) read INPUTS as a Kaldi ``wav.scp`` (``id path.wav`` lines) or a directory of ``.wav``
files (16 kHz mono; the id is the file stem); MT models (Marian, mBART, T5, …) read a text file, one source
sentence per line, ids 0, 1, … (as fairseq and Moses number them, so plain reference files attach by line).
Each utterance gets the k best sequences, best first, with columns ``score`` (``sequences_scores``, what beam
search ranked by) and ``logprob`` (the unnormalised sum of token log-probs) — see README.md beside this file.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
import transformers as tf
from transformers.models.auto.modeling_auto import MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES

import rescorer
from rescorer.io import nbest_from_generate


def audio_inputs(inputs: Path) -> list[tuple[str, Path]]:
    """(id, wav) pairs from a wav.scp or a directory of .wav files."""
    if inputs.is_dir():
        return [(p.stem, p) for p in sorted(inputs.glob("*.wav"))]
    rows = [line.split(maxsplit=1) for line in inputs.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(key, Path(path.strip())) for key, path in rows]


def read_wav(path: Path, rate: int) -> np.ndarray:
    from scipy.io import wavfile

    got, samples = wavfile.read(path)
    if got != rate:
        sys.exit(f"generate_nbest: {path}: {got} Hz, the model wants {rate} Hz (resample it first, e.g. sox)")
    samples = samples.mean(axis=1) if samples.ndim == 2 else samples
    scale = float(np.iinfo(samples.dtype).max) if np.issubdtype(samples.dtype, np.integer) else 1.0
    return samples.astype(np.float32) / scale


def generate(model, batch: dict, args: argparse.Namespace, prompt: list[int] | None):
    """k-best beam search. Whisper's own generate repeats the input for num_return_sequences and returns its best
    beam k times, so Whisper goes through the generic beam search with its decoder prompt instead."""
    options = dict(num_beams=args.beams, num_return_sequences=args.beams, output_scores=True,
                   return_dict_in_generate=True, max_new_tokens=args.max_new_tokens)
    if prompt is None:
        return model.generate(**batch, **options)
    start = torch.tensor([prompt] * len(next(iter(batch.values()))), device=model.device)
    return tf.GenerationMixin.generate(model, **batch, decoder_input_ids=start, **options)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a Hugging Face seq2seq ASR or MT model directory")
    parser.add_argument("inputs", type=Path, help="ASR: wav.scp or a directory of .wav; MT: one sentence per line")
    parser.add_argument("out", type=Path, help="the N-best list to write (canonical JSONL)")
    parser.add_argument("--beams", type=int, default=10, help="beam size = hypotheses per utterance (default 10)")
    parser.add_argument("--batch", type=int, default=8, help="inputs per generate call (default 8)")
    parser.add_argument("--max-new-tokens", type=int, default=200)
    parser.add_argument("--language", default="en", help="Whisper: the language token (default en)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args(argv)

    config = tf.AutoConfig.from_pretrained(args.model)
    asr = config.model_type in MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES
    if asr:
        processor = tf.AutoProcessor.from_pretrained(args.model)
        tokenizer, model = processor.tokenizer, tf.AutoModelForSpeechSeq2Seq.from_pretrained(args.model)
        items = audio_inputs(args.inputs)
    else:
        tokenizer, model = tf.AutoTokenizer.from_pretrained(args.model), tf.AutoModelForSeq2SeqLM.from_pretrained(args.model)
        lines = args.inputs.read_text(encoding="utf-8").splitlines()
        items = [(str(i), line) for i, line in enumerate(lines)]
    if not items:
        sys.exit(f"generate_nbest: no inputs in {args.inputs}")
    prompt = None
    if config.model_type == "whisper":
        tokenizer.set_prefix_tokens(language=args.language, task="transcribe", predict_timestamps=False)
        prompt = tokenizer.prefix_tokens
    model.to(args.device).eval()
    parts = []
    for at in range(0, len(items), args.batch):
        chunk = items[at : at + args.batch]
        if asr:
            rate = processor.feature_extractor.sampling_rate
            batch = processor([read_wav(path, rate) for _, path in chunk], sampling_rate=rate, return_tensors="pt")
        else:
            batch = tokenizer([text for _, text in chunk], return_tensors="pt", padding=True)
        with torch.inference_mode():
            outputs = generate(model, {k: v.to(args.device) for k, v in batch.items()}, args, prompt)
        parts.append(nbest_from_generate(outputs, tokenizer, args.beams, ids=[key for key, _ in chunk]))
    nbest = parts[0].with_utterances([u for part in parts for u in part])
    rescorer.write_nbest(nbest, args.out, "jsonl")
    print(f"generate_nbest: {len(nbest)} utterances × {args.beams} hypotheses → {args.out}")


if __name__ == "__main__":
    main()
