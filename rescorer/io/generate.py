"""An N-best list from Hugging Face ``model.generate`` output (beam search with ``num_return_sequences``).

Torch-free: it only calls methods of the tensors and the tokenizer it is given, so ``rescorer.io`` imports no torch.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..errors import ConfigError
from ..types import Hypothesis, NBest, Utterance

SCORE = "score"      # sequences_scores: what beam search ranked by (sum of log-probs / length ** length_penalty)
LOGPROB = "logprob"  # the sum of the chosen tokens' log-probs, unnormalised (when ``scores`` were returned)


def _rows(tensor: Any) -> list:
    return tensor.tolist() if hasattr(tensor, "tolist") else list(tensor)


def step_logprob_sums(outputs: Any, eos: int | None = None) -> list[float] | None:
    """Per returned sequence, the sum of its tokens' log-probs as generate scored them (``outputs.scores``, the
    processed log-softmax at each step, read through ``beam_indices``); None when generate did not return scores.
    As ``model.compute_transition_scores(sequences, scores, beam_indices).sum(-1)``; without beams (greedy,
    sampling) a sequence ends at its first ``eos``. Whisper's own ``generate`` returns each sequence's scores
    gathered along its beam already (its ``beam_indices`` then point past the score rows), read as they are."""
    steps = getattr(outputs, "scores", None)
    if not steps:
        return None
    sequences = _rows(outputs.sequences)
    beams = getattr(outputs, "beam_indices", None)
    if beams is not None:
        paths = [[b for b in row if b >= 0] for row in _rows(beams)]  # -1 pads a beam that finished early
        if any(b >= len(steps[0]) for path in paths for b in path):  # Whisper's generate: scores already follow
            paths = [[row] * len(path) for row, path in enumerate(paths)]  # each returned sequence's beam
    else:
        paths = [[row] * len(steps) for row in range(len(sequences))]
    generated = max((len(p) for p in paths), default=0)
    sums = []
    for tokens, path in zip(sequences, paths):
        first = len(tokens) - generated  # the prompt (decoder start, forced tokens) comes before step 0
        total = 0.0
        for step, beam in enumerate(path):
            token = tokens[first + step]
            total += float(steps[step][beam, token])
            if beams is None and token == eos:
                break
        sums.append(total)
    return sums


def nbest_from_generate(outputs: Any, tokenizer: Any, num_return_sequences: int | None = None, *,
                        ids: Sequence[str] | None = None, refs: Sequence[str] | None = None,
                        skip_special_tokens: bool = True, strip: bool = True, **decode: Any) -> NBest:
    """The N-best list of ``outputs = model.generate(..., num_beams=k, num_return_sequences=k, output_scores=True,
    return_dict_in_generate=True)``: one utterance per input (ids ``ids``, default ``0, 1, …``; references ``refs``),
    its k sequences best first, texts ``tokenizer.batch_decode(sequences, skip_special_tokens=…, **decode)``
    (surrounding whitespace stripped unless ``strip=False``). Columns: ``score`` = ``sequences_scores`` (what beam
    search ranked by) and ``logprob`` = the unnormalised sum of token log-probs (when ``scores`` were returned;
    for greedy or sampled output, the only column)."""
    sequences = _rows(outputs.sequences)
    k = num_return_sequences or (len(sequences) // len(ids) if ids else None)
    if not k or len(sequences) % k:
        raise ConfigError(f"{len(sequences)} sequences are not {k or '?'} per input: pass num_return_sequences "
                          "(or ids, one per input)")
    count = len(sequences) // k
    ids = [str(i) for i in (ids if ids is not None else range(count))]
    if len(ids) != count or (refs is not None and len(refs) != count):
        raise ConfigError(f"{count} inputs generated, but {len(ids)} ids and {len(refs or ids)} references given")
    texts = tokenizer.batch_decode(outputs.sequences, skip_special_tokens=skip_special_tokens, **decode)
    columns: dict[str, list[float]] = {}
    if getattr(outputs, "sequences_scores", None) is not None:
        columns[SCORE] = [float(x) for x in _rows(outputs.sequences_scores)]
    sums = step_logprob_sums(outputs, getattr(tokenizer, "eos_token_id", None))
    if sums is not None:
        columns[LOGPROB] = sums
    utterances = []
    for i, uid in enumerate(ids):
        hyps = tuple(Hypothesis(texts[j].strip() if strip else texts[j], {c: v[j] for c, v in columns.items()})
                     for j in range(i * k, (i + 1) * k))
        utterances.append(Utterance(uid, hyps, refs[i] if refs is not None else None, origin=f"generate:{i}"))
    return NBest(utterances, fmt="jsonl", source="generate")
