"""``rescorer task=score``: add LM score columns to every hypothesis and write the lists back, with a PPL table."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from .. import __version__
from ..io import write_nbest
from ..io.sets import Corpus
from ..report import write_report
from ..scorers import Scorer, score_nbest
from ..types import NBest

DIRECTORY_FORMATS = ("espnet2", "kaldi")


def write_scored(nbest: NBest, out_dir: Path, name: str) -> dict[str, str]:
    """The set in its own format (``out_dir/name/``) and as canonical JSONL (``out_dir/name.jsonl``)."""
    source = Path(nbest.source)
    native = out_dir / name / ("nbest" if nbest.fmt in DIRECTORY_FORMATS else source.name or f"nbest.{nbest.fmt}")
    write_nbest(nbest, native)
    write_nbest(nbest, out_dir / f"{name}.jsonl", "jsonl")
    return {"native": str(native), "jsonl": str(out_dir / f"{name}.jsonl")}


def perplexities(nbest: NBest, scorer: Scorer) -> dict[str, dict[str, float]]:
    """Token- and word-level (P)PPL of the input 1-best and, when known, of the references."""
    best = [u.hyps[0].text if u.hyps else "" for u in nbest]
    out = {"1best": scorer.perplexity(best).as_dict()}
    if nbest.has_refs:
        out["ref"] = scorer.perplexity(nbest.refs()).as_dict()
    return out


def score_corpus(corpus: Corpus, scorers: Mapping[str, Scorer], out_dir: str | Path) -> dict[str, Any]:
    out = Path(out_dir)
    sets = {}
    for name, spec in corpus.sets.items():
        nbest = spec.read()
        scored, _ = score_nbest(nbest, scorers)
        entry: dict[str, Any] = {"format": nbest.fmt, "utterances": len(nbest), "hypotheses": nbest.num_hypotheses,
                                 "outputs": write_scored(scored, out, name), "scorers": {}}
        for column, scorer in scorers.items():
            stats = scorer.last_stats
            entry["scorers"][column] = {
                "texts": stats.sentences, "cached": stats.cached, "rows": stats.rows_computed,
                "seconds": stats.seconds, "ppl": perplexities(nbest, scorer)}
        sets[name] = entry
    report = {"task": "score", "data": corpus.name,
              "signature": f"rescorer:{__version__}", "scorers": {c: s.signature for c, s in scorers.items()},
              "sets": sets}
    columns = [c for column in scorers for c in (f"scorers.{column}.rows", f"scorers.{column}.seconds",
                                                 f"scorers.{column}.ppl.1best.word_ppl",
                                                 f"scorers.{column}.ppl.ref.word_ppl")]
    write_report(out, report, ["utterances", "hypotheses", *columns], f"{corpus.name}: LM scores added")
    return report


def instantiate_scorers(cfg: Any) -> dict[str, Scorer]:
    """The selected ``scorer`` group entries, loaded (column name → scorer)."""
    from hydra.utils import instantiate

    return {name: instantiate(node, _convert_="all") for name, node in (cfg.get("scorer") or {}).items()}


def run(cfg: Any) -> dict[str, Any]:
    from hydra.utils import instantiate

    return score_corpus(instantiate(cfg.data, _convert_="all"), instantiate_scorers(cfg), cfg.out_dir)
