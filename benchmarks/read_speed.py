"""Time reading the three LibriSpeech 30-best sets (8187 utterances × 30) with references."""
from __future__ import annotations

import sys
import time
from pathlib import Path

from rescorer import read_nbest
from rescorer.paths import data_root

DATA = data_root() / "librispeech-espnet-30best"


def main(root: Path = DATA) -> None:
    if not root.exists():
        sys.exit(f"no data at {root}")
    start = time.perf_counter()
    utterances = hypotheses = 0
    for name in ("dev_clean", "dev_other", "test_clean"):
        nbest = read_nbest(root / name, refs=root / name / "references" / "ref_wer.trn")
        utterances += len(nbest)
        hypotheses += nbest.num_hypotheses
    seconds = time.perf_counter() - start
    print(f"read {utterances} utterances, {hypotheses} hypotheses in {seconds:.2f} s "
          f"({hypotheses / seconds:,.0f} hypotheses/s)")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DATA)
