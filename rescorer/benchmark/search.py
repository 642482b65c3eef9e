"""Weight search on real LibriSpeech lists: fast (sufficient statistics) vs paper-faithful (jiwer per setting)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..log import info
from ..paths import data_root
from .common import save, stamp


def bench_search(out_dir: str | Path = "exp/bench", repeats: int = 3) -> dict[str, Any]:
    """A 21×11 grid over the ESPnet ``ctc`` and ``lm`` columns of dev_other + test_clean (~5.5k utterances × 30)."""
    from ..combine import Column, Features, fast_search, grid_search
    from ..io import read_nbest
    from ..metrics import NBestStats, make_metric

    root = data_root() / "librispeech-espnet-30best"
    if not root.exists():
        raise FileNotFoundError(f"the search benchmark needs {root}")
    parts = [read_nbest(root / name, refs=root / name / "references" / "ref_wer.trn")
             for name in ("dev_other", "test_clean")]
    nbest = parts[0].with_utterances(parts[0].utterances + parts[1].utterances)
    columns = [Column("ctc", step=0.05), Column("lm", step=0.1)]
    features = Features.of(nbest, Column("decoder"), columns)
    stats = NBestStats.compute(nbest, make_metric("wer"))
    fast = min((fast_search(features, stats, columns) for _ in range(repeats)), key=lambda r: r.seconds)
    grid = grid_search(nbest, features, stats, columns)
    result = stamp(kind="search", utterances=len(nbest), hypotheses=nbest.num_hypotheses, settings=fast.evaluated,
                   fast_seconds=fast.seconds, grid_seconds=grid.seconds, same_optimum=fast.weights == grid.weights,
                   weights=fast.weights, wer=100 * fast.dev, tflops=None, mfu=None, mfu_note="n/a (no model)")
    info(f"search: {result['settings']} settings over {result['utterances']} utterances × 30: fast {fast.seconds:.3f} s, "
          f"paper-faithful grid {grid.seconds:.1f} s ({grid.seconds / fast.seconds:.0f}x); same optimum: "
          f"{result['same_optimum']} ({fast.weights}, WER {result['wer']:.2f}%); TFLOP/s, MFU: n/a (no model)")
    return save(result, out_dir, "bench_search.json")
