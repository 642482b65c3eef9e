"""Final hidden states of a masked-LM encoder at one position per row, computing no more than that needs.

Every layer but the last must run at every position (later layers attend to them). The last layer's keys
and values still need every position, but its query, attention output and feed-forward are needed only
at the gathered position: for BERT-style post-LN layers (BERT, RoBERTa, XLM-R, CamemBERT, ELECTRA) that
skips about 80% of the last layer. Other architectures run whole and are gathered afterwards.
"""
from __future__ import annotations

import copy
from typing import Any

BERT_STYLE_LAYERS = ("BertLayer", "RobertaLayer", "XLMRobertaLayer", "CamembertLayer", "ElectraLayer")


def trunk_and_last_layer(encoder: Any) -> tuple[Any, Any] | tuple[None, None]:
    """(a view of ``encoder`` without its last layer, that layer) when the fast path applies, else (None, None)."""
    layers = getattr(getattr(encoder, "encoder", None), "layer", None)
    config = encoder.config
    if (layers is None or len(layers) < 2 or type(layers[-1]).__name__ not in BERT_STYLE_LAYERS
            or getattr(config, "position_embedding_type", "absolute") != "absolute" or config.is_decoder
            or getattr(config, "chunk_size_feed_forward", 0)):
        return None, None
    trunk = copy.copy(encoder)  # shares every parameter; only the layer list differs
    trunk._modules = dict(encoder._modules)  # own module tables, so the model itself keeps its last layer
    trunk.encoder = copy.copy(encoder.encoder)
    trunk.encoder._modules = dict(encoder.encoder._modules)
    trunk.encoder.layer = type(layers)(list(layers)[:-1])
    return trunk, layers[-1]


def bert_layer_at(layer: Any, hidden: Any, attention_mask: Any, rows: Any, cols: Any) -> Any:
    """A BERT-style layer's output at position ``cols[b]`` of row ``rows[b]``: [B, H]."""
    import torch.nn.functional as F

    attn = layer.attention.self
    batch, length, width = hidden.shape
    heads, size = attn.num_attention_heads, attn.attention_head_size
    x = hidden[rows, cols]
    query = attn.query(x).view(batch, heads, 1, size)
    key = attn.key(hidden).view(batch, length, heads, size).transpose(1, 2)
    value = attn.value(hidden).view(batch, length, heads, size).transpose(1, 2)
    mask = None if attention_mask is None else attention_mask[:, None, None, :].bool()
    context = F.scaled_dot_product_attention(query, key, value, attn_mask=mask, scale=attn.scaling)
    attended = layer.attention.output(context.reshape(batch, heads * size), x)
    return layer.output(layer.intermediate(attended), attended)


class EncoderAt:
    """``encoder_at(input_ids, attention_mask, rows, cols)`` → final hidden states [B, H] at the given positions."""

    def __init__(self, encoder: Any, fast: bool = True):
        self.encoder = encoder
        self.trunk, self.last = trunk_and_last_layer(encoder) if fast else (None, None)

    @property
    def fast(self) -> bool:
        return self.trunk is not None

    def __call__(self, input_ids: Any, attention_mask: Any, rows: Any, cols: Any) -> Any:
        if self.trunk is None:
            return self.encoder(input_ids=input_ids, attention_mask=attention_mask)[0][rows, cols]
        hidden = self.trunk(input_ids=input_ids, attention_mask=attention_mask)[0]
        return bert_layer_at(self.last, hidden, attention_mask, rows, cols)
