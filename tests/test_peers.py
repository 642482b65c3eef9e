"""Our scores equal the peer library's on the same model and text: minicons for PLL and causal LL."""
from __future__ import annotations

import numpy as np
import pytest

from rescorer import load_scorer

from .test_scorers import TEXTS

minicons = pytest.importorskip("minicons.scorer", reason="minicons (the peer) is not installed (make setup installs it)")
PEER_TEXTS = [t for t in TEXTS if t]  # minicons cannot score an empty text


@pytest.fixture(autouse=True)
def batch_encode_plus_shim(monkeypatch):
    """minicons 0.3 calls ``batch_encode_plus``, which transformers 5 removed: map it to ``__call__``."""
    from transformers import PreTrainedTokenizerBase

    if not hasattr(PreTrainedTokenizerBase, "batch_encode_plus"):
        monkeypatch.setattr(PreTrainedTokenizerBase, "batch_encode_plus", lambda self, *a, **k: self(*a, **k),
                            raising=False)


@pytest.mark.parametrize("arch", ["bert", "roberta"])
@pytest.mark.parametrize("ours, theirs", [("original", "original"), ("word_l2r", "within_word_l2r")])
def test_pll_equals_minicons(tiny_models, arch, ours, theirs):
    peer = minicons.MaskedLMScorer(str(tiny_models[arch]), "cpu")
    want = peer.sequence_score(PEER_TEXTS, reduction=lambda x: x.sum(0).item(), PLL_metric=theirs)
    got = load_scorer("pll", str(tiny_models[arch]), variant=ours, progress=False).score(PEER_TEXTS)
    np.testing.assert_allclose(got, want, atol=1e-4)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_causal_ll_equals_minicons(tiny_models, arch):
    peer = minicons.IncrementalLMScorer(str(tiny_models[arch]), "cpu")
    want = peer.sequence_score(PEER_TEXTS, reduction=lambda x: x.sum(0).item(), bos_token=True)
    got = load_scorer("ll", str(tiny_models[arch]), score_eos=False, progress=False).score(PEER_TEXTS)
    np.testing.assert_allclose(got, want, atol=1e-4)
