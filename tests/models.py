"""The texts the tiny models' tokenizers are trained on (the models themselves are session fixtures in conftest.py)."""
from __future__ import annotations

from rescorer import read_nbest

from .conftest import DEMO


def demo_texts() -> list[str]:
    nbest = read_nbest(DEMO / "dev_other", refs=DEMO / "dev_other" / "ref.trn")
    return [u.ref for u in nbest] + [h.text for u in nbest for h in u.hyps[:5]]
