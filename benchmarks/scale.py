"""Memory and time as the lists grow: a rescoring run (U utterances × 10 hypotheses, U = 12.5k, 25k, 50k) and a
sharded apply of a tuned rescorer (U = 50k, 200k, 1M, in shards of 10,000 utterances).

Each size is a dev and a test JSONL list built from the shipped demo texts (real LibriSpeech hypotheses, ids made
unique), tuned on an input column (no LM, so the run measures reading, tuning, re-ranking and writing). Each size
runs twice in a fresh process, with and without ``out_dir``: the difference is the time spent writing. Peak memory
is the process's maximum resident set. Prints a table and writes ``benchmarks/results/scale.json``.

    python benchmarks/scale.py [12500 25000 50000]

The apply run re-ranks the same utterances laid out as a user has them: JSONL shards, one JSONL file, one ESPnet2
decode directory and one fairseq file (``task.inputs``), and the JSONL file as a ``data.sets`` set, each with a
tuned.yaml tuned on the word count (no LM: the run measures reading, re-ranking, writing and the report) in a fresh
process, timed from the package loaded (the time to load it is reported beside), with its peak memory. For the
shards, in turns with the apply, the time to only ``json.loads`` every line of the same files is measured, each
three times, and the apply's input MB/s is reported against it (medians). Writes
``benchmarks/results/apply_scale.json``.

    python benchmarks/scale.py apply [50000 200000 1000000]
    python benchmarks/scale.py apply --only "one fairseq file" 1000000   # one layout again, its rows replaced

The student run applies a tuned.yaml with the shipped student to U real LibriSpeech 10-best lists (the shared
ESPnet 30-best lists cut into windows, as the Ray benchmark builds them) in shards of 10,000 utterances, through
``task=apply`` with one torch thread and a fresh score store: every distinct text is scored once, a text seen
before (in another window) comes from the store. Writes ``benchmarks/results/apply_student.json``.

    python benchmarks/scale.py student [50000]
"""
from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "recipes" / "demo" / "data"
PEAK = """
import resource

def peak_mb():
    \"\"\"This program's own peak resident set (VmHWM): ru_maxrss also counts the parent's, as it was at the fork.\"\"\"
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""
RUN = PEAK + """
import sys, time, json, rescorer
start = time.perf_counter()
out = sys.argv[3] if len(sys.argv) > 3 else None
result = rescorer.rescore(dev=sys.argv[1], sets={"test": sys.argv[2]}, scorers={}, base="score",
                          columns={"ctc": {"range": [0, 1], "step": 0.1}}, bootstrap=1000, out_dir=out, retune=None)
if out is None:  # the re-ranked lists are made as they are written, or here: both runs make them
    [len(nbest) for nbest in result.nbests.values()]
print(json.dumps({"seconds": time.perf_counter() - start, "peak_mb": peak_mb()}))
"""


APPLY = PEAK + """
import sys, time, json
start = time.perf_counter()
import rescorer, rescorer.pipeline  # loaded before the clock starts, as json is before json.loads is timed
loaded = time.perf_counter()
tuned, source, out, spelling = sys.argv[1:5]
if spelling == "inputs":
    rescorer.apply(None, tuned, inputs=source, out_dir=out)
else:  # the data.sets spelling: the same file as a named set
    rescorer.apply({"test": {"nbest": source}}, tuned, out_dir=out)
print(json.dumps({"seconds": time.perf_counter() - loaded, "import_seconds": loaded - start,
                  "peak_mb": peak_mb()}))
"""
# The inputs every size is applied to: (name, how it is built from the JSONL shards, how it is given)
LAYOUTS = (("JSONL shards", None, "inputs"), ("one JSONL file", "jsonl", "inputs"),
           ("one ESPnet2 decode directory", "espnet2", "inputs"), ("one fairseq file", "fairseq", "inputs"),
           ("one JSONL file as data.sets", "jsonl", "sets"))
SHARD = 10_000  # utterances per shard of the apply run
REPEATS = 3  # runs of each apply size (and of json.loads over its files), in turns: their medians are compared


def build(utterances: int, path: Path, seed: int, first: int = 0) -> int:
    """A JSONL list of ``utterances`` × 10 hypotheses from the demo's real lists (ids from ``first`` on); its size
    in bytes."""
    import rescorer

    source = rescorer.read_nbest(DEMO / "dev_other", refs=DEMO / "dev_other" / "ref.trn")
    lists = [u for u in source if len(u.hyps) >= 10]
    with path.open("w", encoding="utf-8") as out:
        for i in range(first, first + utterances):
            utt = lists[(i * 7 + seed) % len(lists)]
            hyps = [{"text": h.text, "scores": {k: h.scores[k] for k in ("score", "ctc")}} for h in utt.hyps[:10]]
            out.write(json.dumps({"id": f"{utt.id}-{i}", "ref": utt.ref, "hyps": hyps}) + "\n")
    return path.stat().st_size


def loads_seconds(paths: list[Path]) -> float:
    """The time to only ``json.loads`` every line of ``paths``: the floor of any JSONL reader in Python."""
    start = time.perf_counter()
    for path in paths:
        with path.open("rb") as handle:
            for line in handle:
                json.loads(line)
    return time.perf_counter() - start


def tuned_file(tmp: Path) -> Path:
    """A tuned.yaml from a 2,000-utterance dev list, tuned on the word count (no LM; a column every format has)."""
    import rescorer

    dev = tmp / "dev.jsonl"
    build(2000, dev, 0)
    rescorer.rescore(sets={"dev": str(dev)}, base="score", columns={"words": {"range": [-1, 1], "step": 0.25}},
                     out_dir=tmp / "tuned", bootstrap=1, retune=None)
    return tmp / "tuned" / "tuned.yaml"


def converted(shards: list[Path], fmt: str, path: Path) -> Path:
    """The utterances of ``shards`` in one list of format ``fmt`` at ``path``, written block by block (for fairseq,
    whose sentence ids are numbers, numbered from 0)."""
    from dataclasses import replace
    from itertools import chain, count

    from rescorer.io import block_writer, read_blocks

    blocks = chain.from_iterable(read_blocks(shard, "jsonl", size=1000) for shard in shards)
    if fmt == "fairseq":
        number = count()
        blocks = (b.with_utterances([replace(u, id=str(next(number))) for u in b]) for b in blocks)
    first = next(blocks)
    with block_writer(path, first, fmt) as write:
        for block in chain([first], blocks):
            write(block)
    return path


def run_apply(tuned: Path, source: Path, out: Path, spelling: str) -> dict:
    """One apply in a fresh process: its seconds (the package loaded), the seconds to load it and the peak memory."""
    args = [sys.executable, "-c", APPLY, str(tuned), str(source), str(out), spelling]
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"the apply of {source} failed:\n{done.stderr[-3000:]}")
    found = json.loads(done.stdout.splitlines()[-1])
    subprocess.run(["rm", "-rf", str(out)], check=True)
    return found


def apply_rows(sizes: list[int], only: list[str] | None = None) -> None:
    """Each size applied as each of :data:`LAYOUTS` (``only``: those named, their rows replacing the same ones of the
    results written before): seconds, peak memory and input MB/s; for the JSONL shards against json.loads of the same
    files, the median of :data:`REPEATS` runs of each, taken in turns."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tuned = tuned_file(Path(tmp))
        for size in sizes:
            shards = Path(tmp) / f"shards{size}"
            shards.mkdir()
            paths = [shards / f"part{k:04d}.jsonl" for k in range(-(-size // SHARD))]
            input_mb = sum(build(min(SHARD, size - k * SHARD), path, 3, k * SHARD)
                             for k, path in enumerate(paths)) / 2**20
            for layout, fmt, spelling in (entry for entry in LAYOUTS if not only or entry[0] in only):
                source = shards if fmt is None else converted(paths, fmt, Path(tmp) / f"all{size}.{fmt}")
                repeats = REPEATS if fmt is None else 1
                floors, runs = [], []
                for _ in range(repeats):
                    os.sync()  # what was written before is on disk: writing it back is not timed with what follows
                    if fmt is None:
                        floors.append(loads_seconds(paths))
                    runs.append(run_apply(tuned, source, Path(tmp) / "out", spelling))
                seconds = statistics.median(r["seconds"] for r in runs)
                row = {"layout": layout, "utterances": size, "hypotheses": 10 * size, "jsonl_mb": round(input_mb, 1),
                       "peak_mb": round(max(r["peak_mb"] for r in runs), 1),
                       "import_seconds": round(statistics.median(r["import_seconds"] for r in runs), 2),
                       "seconds": round(seconds, 2), "jsonl_mb_per_s": round(input_mb / seconds, 2)}
                if floors:
                    floor = statistics.median(floors)
                    row.update(seconds_range=[round(min(r["seconds"] for r in runs), 2),
                                              round(max(r["seconds"] for r in runs), 2)],
                               loads_seconds=round(floor, 2), loads_mb_per_s=round(input_mb / floor, 2),
                               ratio_to_loads=round(floor / seconds, 3))
                rows.append(row)
                print(" | ".join(f"{k} {v}" for k, v in row.items()), flush=True)
                if fmt is not None and spelling == "inputs" and fmt != "jsonl":
                    subprocess.run(["rm", "-rf", str(source)], check=True)
            subprocess.run(["rm", "-rf", str(shards), *map(str, Path(tmp).glob(f"all{size}.*"))], check=True)
    command = (f"python benchmarks/scale.py apply {' '.join(f'--only {layout!r}' for layout in only or [])} "
               + " ".join(map(str, sizes))).replace("  ", " ")
    if only:  # the other rows as measured before, this run's in their place
        before = json.loads((ROOT / "benchmarks" / "results" / "apply_scale.json").read_text())
        done = {(row["layout"], row["utterances"]) for row in rows}
        order = [layout for layout, _, _ in LAYOUTS]
        rows = sorted([row for row in before["rows"] if (row["layout"], row["utterances"]) not in done] + rows,
                      key=lambda row: (row["utterances"], order.index(row["layout"])))
        command = f"{before['command']}; then {command}"
    save("apply_scale.json", command, rows,
         f"per size: U utterances × 10 hypotheses built as JSONL shards of {SHARD:,} utterances, and the same "
         "utterances converted to one JSONL file, one ESPnet2 decode directory and one fairseq file; each re-ranked "
         "with a tuned.yaml tuned on the word count (no LM) in a fresh process (task.inputs, and the JSONL file also "
         "as a data.sets set); seconds: the apply call, the package loaded (import_seconds, before it); peak_mb: "
         "the process's maximum resident set; jsonl_mb_per_s: the JSONL size over the seconds (the same content "
         f"in every layout); for the shards, loads_seconds: json.loads of every line of the same files, each the "
         f"median of {REPEATS} runs taken in turns (seconds_range: the apply's fastest and slowest)")


def student_row(utterances: int) -> None:
    """A sharded apply of ``utterances`` real 10-best lists with the student: seconds, peak memory, texts/s."""
    from ray_engine import REFS, SOURCE, corpus, student_tuned
    import rescorer
    from rescorer.io import write_nbest

    with tempfile.TemporaryDirectory() as tmp:
        demo = rescorer.read_nbest(SOURCE, refs=REFS)
        tuned = student_tuned(demo, Path(tmp) / "tuned")
        cut = corpus(utterances)
        for k in range(0, len(cut), SHARD):
            write_nbest(demo.with_utterances(cut[k : k + SHARD]), Path(tmp) / "shards" / f"part{k // SHARD:03d}.jsonl",
                        "jsonl")
        distinct = len({h.text for u in cut for h in u.hyps})
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "rescorer.cli", "task=apply", f"task.tuned={tuned}", "engine.threads=1",
                        f"engine.store={Path(tmp) / 'store.sqlite'}", f"task.inputs={Path(tmp) / 'shards'}",
                        f"out_dir={Path(tmp) / 'out'}"], check=True, capture_output=True)
        seconds = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    row = {"utterances": len(cut), "hypotheses": sum(len(u.hyps) for u in cut), "distinct_texts": distinct,
           "shards": -(-len(cut) // SHARD), "threads": 1, "seconds": round(seconds, 1), "peak_mb": round(peak, 1),
           "texts_per_s": round(distinct / seconds, 1), "hypotheses_per_s": round(sum(len(u.hyps) for u in cut) / seconds, 1)}
    print(row, flush=True)
    save("apply_student.json", f"python benchmarks/scale.py student {utterances}", [row],
         "real LibriSpeech 10-best lists (the shared ESPnet 30-best lists cut into windows), the shipped student, "
         "one torch thread, a fresh store: each distinct text scored once, texts seen before answered by the store")


def save(name: str, command: str, rows: list[dict], note: str) -> None:
    result = {"date": str(date.today()), "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}",
              "python": platform.python_version(),
              "command": command, "note": note, "rows": rows}
    path = ROOT / "benchmarks" / "results" / name
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {path}")


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
    save("scale.json", "python benchmarks/scale.py " + " ".join(map(str, sizes)), rows, "per size: a dev and a test list of U utterances × 10 hypotheses (both "
         "counted in input_mb), tuned on ctc over 11 weights, 1,000 bootstrap resamples")


if __name__ == "__main__":
    if sys.argv[1:2] == ["student"]:
        student_row(int(sys.argv[2]) if len(sys.argv) > 2 else 50000)
    elif sys.argv[1:2] == ["apply"]:
        words = sys.argv[2:]
        only = [words[k + 1] for k, word in enumerate(words) if word == "--only"]
        numbers = [int(w) for k, w in enumerate(words) if w != "--only" and (k == 0 or words[k - 1] != "--only")]
        apply_rows(numbers or [50000, 200000, 1000000], only)
    else:
        main([int(a) for a in sys.argv[1:]] or [12500, 25000, 50000])
