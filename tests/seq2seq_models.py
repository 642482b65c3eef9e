"""Tiny random-weight Whisper (ASR) and Marian (MT) models built from configs, with tokenizers trained offline on
the shipped demo texts and saved like real checkpoints (``from_pretrained`` reads them back; nothing downloaded)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from .models import demo_texts

WHISPER_SPECIALS = ["<|startoftranscript|>", "<|en|>", "<|transcribe|>", "<|translate|>", "<|notimestamps|>"]


def texts() -> list[str]:
    return [t.lower() for t in demo_texts()[:400]]


def build_whisper(out: Path) -> Path:
    """Whisper, 1+1 layers of width 64, 1-second inputs (100 mel frames), a 300-piece byte-level BPE."""
    import torch
    import transformers as tf
    from tokenizers import ByteLevelBPETokenizer

    raw = ByteLevelBPETokenizer()
    raw.train_from_iterator(texts(), vocab_size=300, min_frequency=1, special_tokens=["<|endoftext|>"])
    tokenizer = tf.WhisperTokenizerFast(tokenizer_object=raw._tokenizer, bos_token="<|endoftext|>",
                                        eos_token="<|endoftext|>", unk_token="<|endoftext|>", pad_token="<|endoftext|>")
    tokenizer.add_special_tokens({"additional_special_tokens": WHISPER_SPECIALS})  # <|en|> = start + 1, as Whisper's
    ids = dict(zip(WHISPER_SPECIALS, tokenizer.convert_tokens_to_ids(WHISPER_SPECIALS)))
    eot = tokenizer.eos_token_id
    config = tf.WhisperConfig(vocab_size=len(tokenizer), num_mel_bins=80, d_model=64, encoder_layers=1, decoder_layers=1,
                              encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=128,
                              decoder_ffn_dim=128, max_source_positions=50, max_target_positions=64, pad_token_id=eot,
                              bos_token_id=eot, eos_token_id=eot, decoder_start_token_id=ids["<|startoftranscript|>"],
                              suppress_tokens=[], begin_suppress_tokens=[])
    torch.manual_seed(0)
    model = tf.WhisperForConditionalGeneration(config).eval()
    generation = model.generation_config
    generation.decoder_start_token_id, generation.eos_token_id, generation.pad_token_id = ids[WHISPER_SPECIALS[0]], eot, eot
    generation.no_timestamps_token_id = ids["<|notimestamps|>"]
    features = tf.WhisperFeatureExtractor(feature_size=80, chunk_length=1)
    tf.WhisperProcessor(feature_extractor=features, tokenizer=tokenizer).save_pretrained(out)
    model.save_pretrained(out)
    return out


def build_marian(out: Path) -> Path:
    """Marian, 1+1 layers of width 64, one 200-piece SentencePiece model for both sides."""
    import sentencepiece as spm
    import torch
    import transformers as tf

    out.mkdir(parents=True, exist_ok=True)
    work = out / "spm"
    work.mkdir(exist_ok=True)
    (work / "train.txt").write_text("\n".join(texts()) + "\n")
    spm.SentencePieceTrainer.train(input=str(work / "train.txt"), model_prefix=str(work / "sp"), vocab_size=200,
                                   model_type="unigram", pad_id=0, eos_id=1, unk_id=2, bos_id=-1, minloglevel=2)
    pieces = spm.SentencePieceProcessor(model_file=str(work / "sp.model"))
    (work / "vocab.json").write_text(json.dumps({pieces.id_to_piece(i): i for i in range(pieces.get_piece_size())}))
    for side in ("source", "target"):
        shutil.copy(work / "sp.model", work / f"{side}.spm")
    tokenizer = tf.MarianTokenizer(str(work / "source.spm"), str(work / "target.spm"), str(work / "vocab.json"))
    config = tf.MarianConfig(vocab_size=len(tokenizer), d_model=64, encoder_layers=1, decoder_layers=1,
                             encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=128,
                             decoder_ffn_dim=128, max_position_embeddings=64, pad_token_id=tokenizer.pad_token_id,
                             eos_token_id=tokenizer.eos_token_id, decoder_start_token_id=tokenizer.pad_token_id,
                             forced_eos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(0)
    tokenizer.save_pretrained(out)
    tf.MarianMTModel(config).eval().save_pretrained(out)
    shutil.rmtree(work)
    return out
