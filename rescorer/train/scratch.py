"""Small transformer LMs trained from scratch (e.g. on a PCFG's samples, Jumelet & Zuidema §5.2, scaled to
the CPU): whitespace word tokenizers and freshly initialised BERT- and GPT-2-shaped models."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..errors import ConfigError

MASKED_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
CAUSAL_SPECIALS = ("[PAD]", "[UNK]", "[BOS]", "[EOS]")


@dataclass(frozen=True)
class Shape:
    """A transformer's size (the paper: 8 layers, 8 heads, 256 wide)."""

    layers: int = 4
    heads: int = 4
    hidden: int = 128
    intermediate: int = 512
    max_length: int = 64  # words per sentence the position embeddings cover (special tokens added)


def word_tokenizer(texts: Sequence[str], causal: bool, min_frequency: int = 1) -> Any:
    """A fast word-level tokenizer over whitespace-separated words (words seen fewer than ``min_frequency``
    times become [UNK]); masked: ``[CLS] … [SEP]`` with [MASK]; causal: [BOS]/[EOS] (added by the caller)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = CAUSAL_SPECIALS if causal else MASKED_SPECIALS
    words = {w for t in texts for w in t.split()}
    clash = [s for s in specials if s in words]
    if clash:
        raise ConfigError(f"the corpus uses the tokenizer's special tokens as words: {clash}")
    raw = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    raw.train_from_iterator(texts, trainers.WordLevelTrainer(min_frequency=min_frequency, special_tokens=list(specials),
                                                             show_progress=False))
    if causal:
        return PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]", pad_token="[PAD]", bos_token="[BOS]",
                                       eos_token="[EOS]", model_max_length=1024)
    raw.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", raw.token_to_id("[CLS]")), ("[SEP]", raw.token_to_id("[SEP]"))])
    return PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]", model_max_length=1024)


def build_lm(tokenizer: Any, shape: Shape, causal: bool, out_dir: str | Path, seed: int = 0) -> Path:
    """A freshly initialised BertForMaskedLM or GPT2LMHeadModel of ``shape`` with ``tokenizer``, saved to
    ``out_dir`` (kept as it is when already there)."""
    import torch
    import transformers as tf

    out = Path(out_dir)
    if (out / "config.json").exists():
        return out
    vocab = len(tokenizer)
    if causal:
        config = tf.GPT2Config(vocab_size=vocab, n_embd=shape.hidden, n_layer=shape.layers, n_head=shape.heads,
                               n_inner=shape.intermediate, n_positions=shape.max_length + 2,
                               bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                               pad_token_id=tokenizer.pad_token_id)
    else:
        config = tf.BertConfig(vocab_size=vocab, hidden_size=shape.hidden, num_hidden_layers=shape.layers,
                               num_attention_heads=shape.heads, intermediate_size=shape.intermediate,
                               max_position_embeddings=shape.max_length + 2, pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(seed)
    model = (tf.GPT2LMHeadModel if causal else tf.BertForMaskedLM)(config)
    tmp = out.with_name(f".{out.name}.tmp")
    tokenizer.save_pretrained(tmp)
    model.save_pretrained(tmp)
    tmp.rename(out)
    return out
