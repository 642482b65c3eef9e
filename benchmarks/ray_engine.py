"""Ray against the local engine on this machine: the same model, the same texts and the same CPUs (the local engine
with 2 threads against 2 Ray actors of 1 CPU each), for the shipped student and a causal LM (SmolLM2-135M), on
real LibriSpeech hypotheses.

For each scorer and engine, in a fresh process: the first call scores N texts (for Ray it also starts the cluster,
the actors and their models: the start-up is its time less the time the same texts take once the actors are
warm), the second scores N other texts with the actors warm (texts/s after start-up). Then a whole sharded
``task=apply`` of U utterances with the student, through each engine. Writes ``benchmarks/results/ray_engine.json``.

    python benchmarks/ray_engine.py [N_STUDENT N_LL U]
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from rescorer.paths import data_root  # noqa: E402

# real ESPnet LibriSpeech lists: the shared test_clean (2,620 utterances) where it is, else the shipped demo excerpt
SHARED = data_root() / "librispeech-espnet-30best" / "test_clean"
DEMO = ROOT / "recipes" / "demo" / "data" / "test_clean"
SOURCE, REFS = (SHARED, SHARED / "references" / "ref_wer.trn") if SHARED.exists() else (DEMO, DEMO / "ref.trn")
# the apply's corpus: every shared set (dev_clean, dev_other, test_clean), each 30-best list cut into three 10-best
# lists of other hypotheses (ids ``ID-w0``, ``-w1``, ``-w2``): up to ~24,000 utterances, nearly every text distinct
CORPUS = [p for p in sorted((data_root() / "librispeech-espnet-30best").glob("*")) if p.is_dir()] or [DEMO]
SCORE = """
import json, sys, time, rescorer
from rescorer.shipped import shipped_model
kind, model, engine, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
texts = json.loads(open(sys.argv[5]).read())
first, second = texts[:count], texts[count : 2 * count]
options = {"threads": 2} if engine == "local" else {
    "scale": {"backend": "ray", "workers": 2, "cpus_per_worker": 1, "block": 32, "init": {"num_cpus": 2}}}
scorer = rescorer.load_scorer(kind, shipped_model(model), progress=False, **options)
start = time.perf_counter(); scorer.score(first); cold = time.perf_counter() - start
start = time.perf_counter(); scorer.score(second); warm = time.perf_counter() - start
print(json.dumps({"cold_seconds": cold, "warm_seconds": warm, "texts": count}))
"""


def texts(count: int) -> list[str]:
    """Distinct hypothesis texts of the demo, longest-first order not imposed."""
    import rescorer

    found = dict.fromkeys(h.text for u in rescorer.read_nbest(SOURCE) for h in u.hyps)
    return list(found)[:count]


def corpus(utterances: int) -> list:
    """The first ``utterances`` 10-best lists of :data:`CORPUS`: each 30-best list cut into windows of 10 at ranks
    0, 10 and 20 (every text of the corpus once), then, where more are wanted, windows that start at ranks 5 and 15,
    2 and 12, … (texts seen before, in other lists); ids ``ID-w<first rank>``."""
    import rescorer
    from dataclasses import replace

    lists, found = [u for path in CORPUS for u in rescorer.read_nbest(path)], []
    for offset in (0, 5, 2, 7, 4, 9, 1, 6, 3, 8):
        for utt in lists:
            found += [replace(utt.with_hyps(utt.hyps[k : k + 10]), id=f"{utt.id}-w{k}")
                      for k in range(offset, len(utt.hyps) - 9, 10)]
            if len(found) >= utterances:
                return found[:utterances]
    return found


def student_tuned(demo, out: Path) -> Path:
    """A tuned.yaml with the shipped student, tuned on 100 of ``demo``'s utterances (10-best)."""
    import rescorer
    from rescorer.shipped import shipped_model

    rescorer.rescore(sets={"dev": demo.with_utterances([u.with_hyps(u.hyps[:10]) for u in demo][:100])},
                     scorers={"student": {"kind": "student", "model": shipped_model("student_mse")}},
                     out_dir=out, bootstrap=10)
    return out / "tuned.yaml"


def measure(kind: str, model: str, engine: str, count: int, pool: Path) -> dict:
    args = [sys.executable, "-c", SCORE, kind, model, engine, str(count), str(pool)]
    done = subprocess.run(args, capture_output=True, text=True, check=True,
                          env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"})
    return json.loads(done.stdout.strip().splitlines()[-1])


def apply_seconds(engine: list[str], tuned: Path, shards: Path, out: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rescorer.cli", "task=apply", f"task.tuned={tuned}", "engine.store=null",
                    f"task.inputs={shards}", f"out_dir={out}", *engine], check=True, capture_output=True)
    return time.perf_counter() - start


def main(n_student: int, n_ll: int, utterances: int) -> None:
    import rescorer
    from rescorer.io import write_nbest

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        pool = Path(tmp) / "texts.json"
        pool.write_text(json.dumps(texts(2 * max(n_student, n_ll))))
        for kind, model, count in (("student", "student_mse", n_student), ("ll", "smollm2", n_ll)):
            local, ray = (measure(kind, model, engine, count, pool) for engine in ("local", "ray"))
            rows.append({"scorer": kind, "texts": count, "local_texts_per_s": round(count / local["warm_seconds"], 1),
                         "ray_texts_per_s": round(count / ray["warm_seconds"], 1),
                         "ratio": round(local["warm_seconds"] / ray["warm_seconds"], 3),
                         "ray_startup_seconds": round(ray["cold_seconds"] - ray["warm_seconds"], 1)})
            print(rows[-1], flush=True)
        demo = rescorer.read_nbest(SOURCE, refs=REFS)
        cut = corpus(utterances)
        tuned = student_tuned(demo, Path(tmp) / "tuned")
        shards, size = Path(tmp) / "shards", max(100, len(cut) // 20)  # 20 shards (of at least 100 utterances)
        for k in range(0, len(cut), size):
            write_nbest(demo.with_utterances(cut[k : k + size]), shards / f"part{k // size:03d}.jsonl", "jsonl")
        ray = ["engine=ray", "engine.scale.workers=2", "engine.scale.cpus_per_worker=1", "+engine.scale.init.num_cpus=2"]
        whole = {name: apply_seconds(engine, tuned, shards, Path(tmp) / name)
                 for name, engine in (("local", ["engine.threads=2"]), ("ray", ray))}
    result = {"date": str(date.today()), "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}",
              "python": platform.python_version(),
              "command": f"python benchmarks/ray_engine.py {n_student} {n_ll} {utterances}",
              "scorers": rows, "apply": {"utterances": len(cut), "hypotheses": sum(len(u.hyps) for u in cut), "shard_utterances": size,
                                         "local_seconds": round(whole["local"], 1), "ray_seconds": round(whole["ray"], 1),
                                         "ratio": round(whole["ray"] / whole["local"], 2)}}
    path = ROOT / "benchmarks" / "results" / "ray_engine.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(result["apply"], f"wrote {path}", sep="\n")


if __name__ == "__main__":
    main(*[int(a) for a in sys.argv[1:4]] if len(sys.argv) > 3 else (1000, 100, 1000))
