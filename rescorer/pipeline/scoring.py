"""Score every hypothesis of an N-best list through the engine, and the (pseudo-)perplexities of a text set."""
from __future__ import annotations

from typing import Mapping, Sequence

from ..context import contexts, scored_texts as context_texts, split
from ..engine import BoundScorer, ScoredTexts
from ..errors import ConfigError
from ..metrics import Perplexity
from ..types import NBest


def score_nbest(nbest: NBest, scorers: Mapping[str, BoundScorer], firsts: Sequence[str] | None = None,
                kept: Mapping[str, ScoredTexts] | None = None) -> tuple[NBest, dict[str, ScoredTexts]]:
    """``nbest`` with one column per scorer (its name) and each column's scores of every hypothesis in
    ``nbest.texts()`` order (totals, per-token scores: their lengths are the penalties' token counts), taking those
    of ``kept`` as they are and reading ``rescored`` contexts from ``firsts``. A scorer named like one of the
    input's score columns is refused: its scores would replace the input's."""
    taken = next((name for name in scorers if name in nbest.columns), None)
    if taken is not None:
        raise ConfigError(f"{nbest.source}: scorer {taken!r} would overwrite the input's score column {taken!r}; "
                          "give the scorer another name")
    kept = kept or {}
    scored = {name: kept[name] if name in kept else scorer.compute(scored_texts(nbest, scorer, firsts=firsts),
                                                                    normalise=False)
              for name, scorer in scorers.items()}
    return nbest.with_columns({name: s.totals for name, s in scored.items()}), scored


def scored_texts(nbest: NBest, scorer: BoundScorer, chosen: Sequence[str] | None = None,
                 firsts: Sequence[str] | None = None) -> list[str]:
    """What ``scorer`` scores for every hypothesis of ``nbest``, or for ``chosen`` (one text per utterance): see
    :func:`rescorer.context.scored_texts`."""
    return context_texts(nbest, scorer.context, scorer.normaliser, chosen, firsts)


def perplexity(scorer: BoundScorer, texts: Sequence[str], known: ScoredTexts | None = None,
               nbest: NBest | None = None, firsts: Sequence[str] | None = None) -> Perplexity:
    """(P)PPL of ``texts`` under ``scorer``, reusing the token scores in ``known`` and scoring only the rest;
    ``texts`` are one per utterance of ``nbest`` when a scorer with context needs their contexts (``rescored``
    ones from ``firsts``)."""
    if scorer.context is not None and nbest is None:
        raise ConfigError("the perplexity of a scorer with context needs the N-best list its texts come from")
    scoring = scored_texts(nbest, scorer, texts, firsts) if nbest is not None else scorer.normalise(texts)
    found = known.by_text() if known is not None else {}
    missing = [t for t in dict.fromkeys(scoring) if t not in found]
    if missing:
        found.update(scorer.compute(missing, normalise=False).by_text())
    return Perplexity.of([found[t][1] for t in scoring], [split(t)[1] for t in scoring])


def set_perplexities(nbest: NBest, scorer: BoundScorer, known: ScoredTexts | None, best: str,
                     chosen: Sequence[str] | None = None) -> dict[str, dict[str, float]]:
    """(P)PPL of the 1-best of ``nbest`` (or of ``chosen``, one text per utterance, which are also the 1-bests a
    ``rescored`` context reads; reported as ``best``) and, when known, of its references."""
    firsts = nbest.select([0] * len(nbest)) if chosen is None else chosen
    out = {best: perplexity(scorer, firsts, known, nbest, firsts).as_dict()}
    if nbest.has_refs:
        out["ref"] = perplexity(scorer, nbest.refs(), known, nbest, firsts).as_dict()
    return out


def reranking(scorers: Mapping[str, BoundScorer]) -> list[str]:
    """The scorers whose context reads the re-ranked 1-bests."""
    return [name for name, scorer in scorers.items() if scorer.context is not None and scorer.context.reranked]


def check_contexts(sets: Mapping[str, NBest], scorers: Mapping[str, BoundScorer], tuning: bool = True) -> None:
    """Refuse, before anything is scored, contexts that cannot be made for ``sets`` (ids that name no recording,
    a group regex that does not match) and, when ``tuning`` (or applying tuned weights, which the references
    judge), contexts made of the references; when not (scores alone), re-ranked contexts, which need weights."""
    reading = [name for name, scorer in scorers.items() if scorer.context and scorer.context.source == "reference"]
    ranking = reranking(scorers)
    if not tuning and ranking:
        raise ConfigError(f"scorer(s) {ranking} read re-ranked 1-bests as context (context.source=rescored): "
                          "that needs weights, so use task=rescore or task=apply (or context.source=first_pass)")
    if tuning and reading:
        raise ConfigError(f"scorer(s) {reading} read the references as context (context.source=reference): that is "
                          "for analysis with task=score only; use context.source=first_pass to tune or apply")
    for scorer in scorers.values():
        for nbest in sets.values() if scorer.context is not None else ():
            contexts(nbest, scorer.context, scorer.normaliser)


RANKED = ("; the weights were searched with the input 1-bests as its context, then each recording was re-ranked "
          "in order, each utterance after the 1-bests chosen before it: every set's figures are after that")


def context_notes(scorers: Mapping[str, BoundScorer], cut: Mapping[str, int]) -> list[str]:
    """What the report says of each scorer's context: its settings, and how many of the texts it scored had their
    context cut to fit the model (``cut``: by column)."""
    notes = []
    for name, scorer in scorers.items():
        context = scorer.context
        if context is not None:
            after = f" and {context.following} later ones" if context.following else ""
            notes.append(f"{name} reads each hypothesis after the {context.source} 1-bests of up to "
                         f"{context.utterances} earlier utterances{after} of its recording (at most {context.tokens} "
                         "tokens)" + (f"; {cut[name]} contexts were cut further to fit the model's positions"
                                      if cut.get(name) else "") + (RANKED if context.reranked else ""))
    return notes
