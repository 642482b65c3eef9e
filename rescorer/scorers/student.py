"""Maskless student (Salazar et al. 2020, §2.2/§3.6): one forward pass predicts a teacher's PLL.

A student is a Hugging Face encoder with a one-output regression head, trained by ``task=distill``:
- ``sentence`` (the paper's): ``*ForSequenceClassification`` — a head on the first ([CLS]) position
  predicts the sentence's mean PLL per token; × the token count gives PLL(S).
- ``token``: ``*ForTokenClassification`` — a head on every position predicts that token's teacher
  log-prob log P(t_i | S\\t_i) without any mask; their sum gives PLL(S).
Targets are standardised in training; ``config.rescorer_student`` holds the scale and the teacher.
A student of a teacher that reads context (``ll_ctx``) reads it too: the previous utterances' 1-bests, as the
teacher's context rule gives them, cut to their last ``context.tokens`` tokens, are the first text of a sentence
pair and the hypothesis the second (:func:`student_inputs`); ``config.rescorer_student.context`` records the rule.
Such a student has a head on every position (the sentence level reads it at the hypothesis's last token), and the
hypotheses after one context share a row that reads the context once (``rescorer.scorers.segments``).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..context import Context, split
from ..errors import ConfigError
from ..normalise import Normaliser
from .base import TOKENIZE_CHUNK, Scorer, no_grad_context
from .rows import RowPool, concat, padded
from .segments import Packed, SegmentInput, pack, rows_batch

LEVELS = ("sentence", "token")


def student_class(level: str, context: Any) -> str:
    """The student's model class: a head on every position where each token is predicted or where a row holds
    several texts after their shared context (a student with context); one on the first position otherwise."""
    return ("AutoModelForTokenClassification" if level == "token" or context
            else "AutoModelForSequenceClassification")


def student_info(config: Any, path: str) -> dict[str, Any]:
    """The student's training record from its config (level, target mean/std, teacher signature)."""
    info = getattr(config, "rescorer_student", None)
    if not info or info.get("level") not in LEVELS:
        raise ConfigError(f"{path}: not a rescorer student (config.json has no valid 'rescorer_student'); "
                          "train one with `rescorer task=distill`")
    return info


def student_normaliser(info: dict[str, Any], case: str | None, append_period: bool | None, path: str) -> Normaliser:
    """The normalisation the student was trained with (``info["normaliser"]``): ``case``/``append_period`` left
    unset take it, set to something else are refused (the student never saw such texts)."""
    recorded = info.get("normaliser")
    trained = Normaliser.from_signature(recorded) if recorded else Normaliser()
    asked = Normaliser(trained.case if case is None else case,
                       trained.append_period if append_period is None else append_period)
    if recorded and asked != trained:
        raise ConfigError(f"{path}: the student learnt from texts normalised as {trained.signature!r}, not "
                          f"{asked.signature!r}: leave case/append_period unset (its own) or set them to match")
    return asked


def student_inputs(tokenizer: Any, texts: Sequence[str], context_tokens: int = 0) -> list[SegmentInput]:
    """How a student reads each text, in training and in scoring alike: its token ids, the positions of the
    hypothesis's tokens (those it scores) and how many leading ids are its context. A conditional text
    (``context.conditional``) is the pair (the context's last ``context_tokens`` tokens, the hypothesis); a text
    without context is the hypothesis alone."""
    if len(texts) > TOKENIZE_CHUNK:
        return [found for at in range(0, len(texts), TOKENIZE_CHUNK)
                for found in student_inputs(tokenizer, texts[at : at + TOKENIZE_CHUNK], context_tokens)]
    if not getattr(tokenizer, "is_fast", False):
        raise ConfigError(f"{tokenizer.name_or_path}: a student needs a fast tokenizer (tokenizer.json)")
    parts = [split(text)[:2] for text in texts]
    if any(context for context, _ in parts) and not context_tokens:
        raise ConfigError("a text read after its context, for a student that reads none")
    cut = _last_tokens([c for c, _ in parts if c], tokenizer, context_tokens)
    out: list[SegmentInput | None] = [None] * len(parts)
    for paired in (False, True):  # the texts without context, then the pairs: one tokenizer call each
        at = [i for i, (context, _) in enumerate(parts) if bool(context) == paired]
        if not at:
            continue
        hypotheses = [parts[i][1] for i in at]
        encoded = tokenizer([cut[parts[i][0]] for i in at], hypotheses) if paired else tokenizer(hypotheses)
        for k, i in enumerate(at):
            ids = np.asarray(encoded["input_ids"][k], dtype=np.int64)
            own = np.flatnonzero(np.asarray([part == int(paired) for part in encoded.sequence_ids(k)]))
            prefix = (int(own[0]) if len(own) else len(ids) - 1) if paired else 0
            out[i] = SegmentInput(ids, own, prefix)
    return out  # type: ignore[return-value]


def readout(inputs: Sequence[SegmentInput], packed: Packed, summary: bool) -> tuple[np.ndarray, np.ndarray]:
    """Where each text's scores are read in its row, concatenated, and where each text's begin: the column of each
    scored token, or (``summary``, the sentence level) its last token's column once per scored token."""
    return concat([packed.text_at[s] + (np.full(len(text.scored), len(text.ids) - 1) if summary else text.scored)
                   for s, text in enumerate(inputs)])


def _last_tokens(contexts: Sequence[str], tokenizer: Any, tokens: int) -> dict[str, str]:
    """What a student reads of each context: the text from its last ``tokens`` tokens on."""
    if not contexts:
        return {}
    offsets = tokenizer(list(contexts), add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    return {context: context[found[-tokens][0]:] if len(found) > tokens else context
            for context, found in zip(contexts, offsets)}


def student_context(info: dict[str, Any], options: Any, path: str) -> Context | None:
    """The context a student reads: the one it learnt with (``info["context"]``), where ``options`` may name its
    recordings (``group``) or its source, not another amount of context."""
    trained = Context.of(info.get("context"))
    if not options:
        return trained
    if trained is None:
        raise ConfigError(f"{path}: the student learnt with no context; leave context unset")
    asked = Context.of({**trained.to_dict(), **options})
    if (asked.utterances, asked.tokens, asked.following) != (trained.utterances, trained.tokens, trained.following):
        raise ConfigError(f"{path}: the student learnt with {trained.utterances} utterances, {trained.tokens} tokens; "
                          "leave context unset (its own) or set only its group and source")
    return asked


class StudentScorer(Scorer):
    """PLL predicted by a distilled student; per-token scores are the predicted token log-probs (``token``)
    or the sentence's predicted mean per token (``sentence``), so sums and token counts match the teacher's."""

    kind = "student"
    default_budget = 4096
    gpu_budget = 131072
    empty_score = float("-inf")  # as its PLL teacher

    def __init__(self, model: str, case: str | None = None, append_period: bool | None = None, device: str = "auto",
                 dtype: str = "auto", revision: str | None = None, loaded: tuple[Any, Any] | None = None,
                 context: Any = None, **common: Any):
        """``case``/``append_period``: unset, the normalisation the student was trained with; another is refused.
        ``context``: unset, the context it learnt with (:func:`student_context`)."""
        import transformers

        from .loading import load_config

        config = load_config(model, revision) if loaded is None else loaded[1].config
        self.info = student_info(config, model)
        super().__init__(normaliser=student_normaliser(self.info, case, append_period, model), **common)
        self.load_model(getattr(transformers, student_class(self.level, self.info.get("context"))), model, device,
                        dtype, loaded, revision=revision)
        self.model.eval()
        learnt = student_context(self.info, context, model)
        self.read_context(learnt and learnt.to_dict(), model)

    @property
    def level(self) -> str:
        return self.info["level"]

    @property
    def signature(self) -> str:
        return self.signed(self.context)

    def signed(self, context: Any) -> str:
        read = {"context": context.signature} if context else {}
        return self._signature(model=self.model_tag, level=self.level, dtype=self.dtype_name, **read)

    def prepare(self, text: str) -> SegmentInput:
        return self.prepare_all([text])[0]

    def prepare_all(self, texts: Sequence[str]) -> list[SegmentInput]:
        """Token ids, scored positions and context of each text (:func:`student_inputs`)."""
        return student_inputs(self.tokenizer, texts, self.context.tokens if self.context else 0)

    def pool(self, sentences: Sequence[SegmentInput]) -> RowPool:
        """Rows of consecutive texts with the same context (``rescorer.scorers.segments``); a row's targets are
        its texts' scored tokens, in order, read from the ``columns`` of its outputs."""
        packed = pack(sentences)
        columns, column_start = readout(sentences, packed, self.level == "sentence")
        targets = np.fromiter((len(text.scored) for text in sentences), dtype=np.int64, count=len(sentences))
        before = np.r_[0, np.cumsum(targets)]
        count = before[packed.row_first + packed.row_texts] - before[packed.row_first]
        return RowPool(packed.row_first, packed.row_length, np.zeros(len(count), dtype=np.int64), count, targets,
                       {"packed": packed, "columns": columns, "column_start": column_start[packed.row_first]},
                       span=packed.row_texts if np.any(packed.row_texts > 1) else None)

    def predict(self, ids: Any, attention: Any, position: Any = None) -> Any:
        """Standardised outputs: [batch] (a head on the first position) or [batch, positions]."""
        return self.model(input_ids=ids, attention_mask=attention, position_ids=position).logits[..., 0].float()

    def forward(self, pool: RowPool, picked: np.ndarray) -> Callable[[], np.ndarray]:
        d = pool.data
        ids, position, attention = rows_batch(d["packed"], picked, self.tokenizer.pad_token_id or 0)
        with no_grad_context(self.device, self.dtype):
            ready = self.to_host(self.predict(self.to_device(ids), self.to_device(attention),
                                              None if position is None else self.to_device(position)))
        count = pool.count[picked]

        def collect() -> np.ndarray:
            values = ready() * self.info["std"] + self.info["mean"]
            if values.ndim == 1:  # one text a row, one output
                return np.repeat(values.astype(np.float32)[:, None], int(count.max(initial=0)), axis=1)
            columns, _ = padded(d["columns"], d["column_start"][picked], count, 0)
            return np.take_along_axis(values, columns, axis=1).astype(np.float32)
        return collect
