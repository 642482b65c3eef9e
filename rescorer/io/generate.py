"""An N-best list from Hugging Face ``model.generate`` output (beam search with ``num_return_sequences``).

Torch-free: it only calls methods of the tensors and the tokenizer it is given, so ``rescorer.io`` imports no torch.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

from ..errors import ConfigError
from ..types import Hypothesis, NBest, Utterance

SCORE = "score"      # sequences_scores: what beam search ranked by (sum of log-probs / length ** length_penalty)
LOGPROB = "logprob"  # the sum of the chosen tokens' log-probs, unnormalised (when ``scores`` were returned)
SOURCES = {SCORE: "sequences_scores", LOGPROB: "summed step scores"}


def _rows(tensor: Any) -> list:
    return tensor.tolist() if hasattr(tensor, "tolist") else list(tensor)


def _width(step: Any) -> int:
    """The vocabulary size of one score step ``[rows, vocab]``."""
    shape = getattr(step, "shape", None)
    return int(shape[-1]) if shape is not None else len(step[0])


def step_logprob_sums(outputs: Any, eos: int | None = None) -> list[float] | None:
    """Per returned sequence, the sum of its tokens' log-probs as generate scored them (``outputs.scores``, the
    processed log-softmax at each step, read through ``beam_indices``); None when generate did not return scores.
    As ``model.compute_transition_scores(sequences, scores, beam_indices).sum(-1)``; without beams (greedy,
    sampling) a sequence ends at its first ``eos``. Whisper's own ``generate`` returns each sequence's scores
    gathered along its beam already (its ``beam_indices`` then point past the score rows), read as they are.
    Shapes, beam indices and token ids that do not fit together are a ConfigError."""
    steps = getattr(outputs, "scores", None)
    if not steps:
        return None
    sequences = _rows(outputs.sequences)
    shapes = sorted({(len(step), _width(step)) for step in steps})
    if len(shapes) != 1:
        raise ConfigError(f"generate output: score steps of different shapes {shapes}")
    (rows, vocab), = shapes
    beams = getattr(outputs, "beam_indices", None)
    if beams is not None and len(beams) != len(sequences):
        raise ConfigError(f"generate output: {len(beams)} rows of beam_indices for {len(sequences)} sequences")
    if beams is not None:
        paths = beam_paths(_rows(beams), rows)
    elif rows == len(sequences):
        paths = [[row] * len(steps) for row in range(len(sequences))]
    else:
        raise ConfigError(f"generate output: {rows} score rows per step for {len(sequences)} sequences (no beam_indices)")
    generated = max((len(p) for p in paths), default=0)
    length = min((len(tokens) for tokens in sequences), default=0)
    if generated > len(steps) or generated > length:
        raise ConfigError(f"generate output: {generated} generated steps, but {len(steps)} score steps and "
                          f"sequences of {length} tokens")
    sums = []
    for i, (tokens, path) in enumerate(zip(sequences, paths)):
        first = len(tokens) - generated  # the prompt (decoder start, forced tokens) comes before step 0
        total = 0.0
        for step, beam in enumerate(path):
            token = tokens[first + step]
            if not 0 <= token < vocab:
                raise ConfigError(f"generate output: sequence {i} has token {token} at step {step}, outside the "
                                  f"{vocab} scores of a step")
            total += float(steps[step][beam, token])
            if beams is None and token == eos:
                break
        sums.append(total)
    return sums


def beam_paths(beams: list[list[int]], rows: int) -> list[list[int]]:
    """The score row of each returned sequence at each step, from ``beam_indices`` (``-1`` pads a beam that finished
    early): the indices themselves when all are score rows, else (Whisper) each sequence's own row — only where the
    indices are those of one beam block per sequence, as Whisper's internal beams are; else a ConfigError."""
    paths = []
    for i, row in enumerate(beams):
        end = row.index(-1) if -1 in row else len(row)
        path = row[:end]
        if any(b < 0 for b in path) or any(b != -1 for b in row[end:]):
            raise ConfigError(f"generate output: beam_indices[{i}] holds a negative index other than -1 padding at "
                              f"the end: {row}")
        paths.append(path)
    if all(b < rows for path in paths for b in path):
        return paths
    if rows == len(paths) and _one_block_each(paths):
        return [[i] * len(path) for i, path in enumerate(paths)]
    i, step, b = next((i, step, b) for i, path in enumerate(paths) for step, b in enumerate(path) if b >= rows)
    raise ConfigError(f"generate output: beam_indices[{i}][{step}] is {b}, past the {rows} score rows of a step")


def _one_block_each(paths: list[list[int]]) -> bool:
    """Whether one block size m puts every index of sequence i in [i·m, (i+1)·m)."""
    low = max((max(path) // (i + 1) + 1 for i, path in enumerate(paths) if path), default=1)
    high = min((min(path) // i for i, path in enumerate(paths) if path and i), default=low)
    return low <= high


def _refuse_unreadable(column: str, values: list[float]) -> None:
    """Refuse NaN and +inf: no N-best file holds them (readers refuse them)."""
    bad = next((j for j, v in enumerate(values) if math.isnan(v) or v == math.inf), None)
    if bad is not None:
        raise ConfigError(f"generate output: {column} of sequence {bad} is {values[bad]}, which no N-best list can hold")


def nbest_from_generate(outputs: Any, tokenizer: Any, num_return_sequences: int | None = None, *,
                        ids: Sequence[str] | None = None, refs: Sequence[str] | None = None,
                        skip_special_tokens: bool = True, strip: bool = True, **decode: Any) -> NBest:
    """The N-best list of ``outputs = model.generate(..., num_beams=k, num_return_sequences=k, output_scores=True,
    return_dict_in_generate=True)``: one utterance per input (ids ``ids``, default ``0, 1, …``; references ``refs``),
    its k sequences best first, texts ``tokenizer.batch_decode(sequences, skip_special_tokens=…, **decode)``
    (surrounding whitespace stripped unless ``strip=False``). Columns: ``score`` = ``sequences_scores`` (what beam
    search ranked by) and ``logprob`` = the unnormalised sum of token log-probs (when ``scores`` were returned;
    for greedy or sampled output, the only column)."""
    if not hasattr(outputs, "sequences"):
        raise ConfigError(f"nbest_from_generate takes what model.generate(..., return_dict_in_generate=True, "
                          f"output_scores=True) returns, not {type(outputs).__name__}")
    sequences = _rows(outputs.sequences)
    k = num_return_sequences or (len(sequences) // len(ids) if ids else None)
    if not k or len(sequences) % k:
        raise ConfigError(f"{len(sequences)} sequences are not {k or '?'} per input: pass num_return_sequences "
                          "(or ids, one per input)")
    count = len(sequences) // k
    ids = [str(i) for i in (ids if ids is not None else range(count))]
    if len(ids) != count or (refs is not None and len(refs) != count):
        raise ConfigError(f"{count} inputs generated, but {len(ids)} ids and {len(refs or ids)} references given")
    columns: dict[str, list[float]] = {}
    if getattr(outputs, "sequences_scores", None) is not None:
        columns[SCORE] = [float(x) for x in _rows(outputs.sequences_scores)]
        if len(columns[SCORE]) != len(sequences):
            raise ConfigError(f"generate output: {len(columns[SCORE])} sequences_scores for {len(sequences)} sequences")
    sums = step_logprob_sums(outputs, getattr(tokenizer, "eos_token_id", None))
    if sums is not None:
        columns[LOGPROB] = sums
    for name, values in columns.items():
        _refuse_unreadable(f"{name} ({SOURCES[name]})", values)
    texts = tokenizer.batch_decode(outputs.sequences, skip_special_tokens=skip_special_tokens, **decode)
    utterances = []
    for i, uid in enumerate(ids):
        hyps = tuple(Hypothesis(texts[j].strip() if strip else texts[j], {c: v[j] for c, v in columns.items()})
                     for j in range(i * k, (i + 1) * k))
        utterances.append(Utterance(uid, hyps, refs[i] if refs is not None else None, origin=f"generate:{i}"))
    return NBest(utterances, fmt="jsonl", source="generate")
