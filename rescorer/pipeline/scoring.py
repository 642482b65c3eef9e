"""Score every hypothesis of an N-best list through the engine, and the (pseudo-)perplexities of a text set."""
from __future__ import annotations

from typing import Mapping, Sequence

from ..engine import BoundScorer, ScoredTexts
from ..errors import ConfigError
from ..metrics import Perplexity
from ..types import NBest


def score_nbest(nbest: NBest, scorers: Mapping[str, BoundScorer]) -> tuple[NBest, dict[str, ScoredTexts]]:
    """``nbest`` with one column per scorer (its name) and each column's scores of every hypothesis in
    ``nbest.texts()`` order (totals, per-token scores: their lengths are the penalties' token counts). A scorer
    named like one of the input's score columns is refused: its scores would replace the input's."""
    taken = next((name for name in scorers if name in nbest.columns), None)
    if taken is not None:
        raise ConfigError(f"{nbest.source}: scorer {taken!r} would overwrite the input's score column {taken!r}; "
                          "give the scorer another name")
    texts = nbest.texts()
    scored = {name: scorer.compute(texts) for name, scorer in scorers.items()}
    return nbest.with_columns({name: s.totals for name, s in scored.items()}), scored


def perplexity(scorer: BoundScorer, texts: Sequence[str], known: ScoredTexts | None = None) -> Perplexity:
    """(P)PPL of ``texts`` under ``scorer``, reusing the token scores in ``known`` and scoring only the rest."""
    normalised = scorer.normalise(texts)
    found = known.by_text() if known is not None else {}
    missing = [t for t in dict.fromkeys(normalised) if t not in found]
    if missing:
        found.update(scorer.compute(missing, normalise=False).by_text())
    return Perplexity.of([found[t][1] for t in normalised], normalised)


def set_perplexities(nbest: NBest, scorer: BoundScorer, known: ScoredTexts | None,
                     best: str) -> dict[str, dict[str, float]]:
    """(P)PPL of the 1-best of ``nbest`` (reported as ``best``) and, when known, of its references."""
    out = {best: perplexity(scorer, nbest.select([0] * len(nbest)), known).as_dict()}
    if nbest.has_refs:
        out["ref"] = perplexity(scorer, nbest.refs(), known).as_dict()
    return out
