"""Memory and time of a rescoring run as the lists grow: U utterances × 10 hypotheses, U = 12.5k, 25k, 50k.

Each size is a dev and a test JSONL list built from the shipped demo texts (real LibriSpeech hypotheses, ids made
unique), tuned on an input column (no LM, so the run measures reading, tuning, re-ranking and writing). Each size
runs twice in a fresh process, with and without ``out_dir``: the difference is the time spent writing. Peak memory
is the process's maximum resident set. Prints a table and writes ``benchmarks/results/scale.json``.

    python benchmarks/scale.py [12500 25000 50000]
"""
from __future__ import annotations

import json
import platform
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "recipes" / "demo" / "data"
RUN = """
import sys, time, json, resource, rescorer
start = time.perf_counter()
out = sys.argv[3] if len(sys.argv) > 3 else None
rescorer.rescore(sys.argv[1], {"test": sys.argv[2]}, {}, base="score",
                 columns={"ctc": {"range": [0, 1], "step": 0.1}}, bootstrap=1000, out_dir=out)
print(json.dumps({"seconds": time.perf_counter() - start,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def build(utterances: int, path: Path, seed: int) -> int:
    """A JSONL list of ``utterances`` × 10 hypotheses from the demo's real lists; its size in bytes."""
    import rescorer

    source = rescorer.read_nbest(DEMO / "dev_other", refs=DEMO / "dev_other" / "ref.trn")
    lists = [u for u in source if len(u.hyps) >= 10]
    with path.open("w", encoding="utf-8") as out:
        for i in range(utterances):
            utt = lists[(i * 7 + seed) % len(lists)]
            hyps = [{"text": h.text, "scores": {k: h.scores[k] for k in ("score", "ctc")}} for h in utt.hyps[:10]]
            out.write(json.dumps({"id": f"{utt.id}-{i}", "ref": utt.ref, "hyps": hyps}) + "\n")
    return path.stat().st_size


def measure(dev: Path, test: Path, out: Path | None) -> dict:
    args = [sys.executable, "-c", RUN, str(dev), str(test)] + ([str(out)] if out else [])
    result = subprocess.run(args, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(sizes: list[int]) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            dev, test = Path(tmp) / f"dev{size}.jsonl", Path(tmp) / f"test{size}.jsonl"
            input_mb = (build(size, dev, 0) + build(size, test, 3)) / 2**20
            written = measure(dev, test, Path(tmp) / f"out{size}")
            unwritten = measure(dev, test, None)
            write_share = max(written["seconds"] - unwritten["seconds"], 0) / written["seconds"]
            rows.append({"utterances": size, "hypotheses": 10 * size, "input_mb": round(input_mb, 1),
                         "peak_mb": round(written["peak_mb"], 1), "peak_over_input": round(written["peak_mb"] / input_mb, 2),
                         "seconds": round(written["seconds"], 2), "seconds_without_writing": round(unwritten["seconds"], 2),
                         "writing_share": round(write_share, 3)})
            print(" | ".join(f"{k} {v}" for k, v in rows[-1].items()), flush=True)
    result = {"date": str(date.today()), "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}",
              "python": platform.python_version(), "command": "python benchmarks/scale.py " + " ".join(map(str, sizes)),
              "note": "per size: a dev and a test list of U utterances × 10 hypotheses (both counted in input_mb), "
                      "tuned on ctc over 11 weights, 1,000 bootstrap resamples", "rows": rows}
    path = ROOT / "benchmarks" / "results" / "scale.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [12500, 25000, 50000])
