"""Which JSON library decodes and encodes canonical JSONL fastest: the figures the codec was chosen on.

A 10,000-utterance × 10-hypothesis JSONL list built from the shipped demo texts (as ``benchmarks/scale.py`` builds
them) is decoded line by line and encoded back by: Python's ``json`` (to dicts), ``orjson`` (to dicts) and
``msgspec`` (straight into rescorer's hypothesis records, validated, as ``rescorer.io.codec`` does); orjson only
where it is installed (it is no dependency). Each is timed
five times; the table gives the fastest, in MB/s of the JSONL text. Writes ``benchmarks/results/json_codec.json``.

    python benchmarks/json_codec.py
"""
from __future__ import annotations

import json
import platform
import sys
import tempfile
from datetime import date
from pathlib import Path

import msgspec

from rescorer.benchmark.common import best_time

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import build  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
REPEATS = 5


def fastest(work) -> float:
    """The fastest of :data:`REPEATS` runs of ``work()``, in seconds."""
    return best_time(work, REPEATS)


def main() -> None:
    from rescorer.io.jsonformats import Line

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "list.jsonl"
        build(10_000, path, 0)
        data = path.read_bytes()
    lines = data.splitlines()
    megabytes = len(data) / 1e6
    typed = msgspec.json.Decoder(Line)
    values = [json.loads(line) for line in lines]
    records = [typed.decode(line) for line in lines]
    encoder = msgspec.json.Encoder()
    rows = [{"library": f"json (Python {platform.python_version()})",
             "decode_mb_per_s": megabytes / fastest(lambda: [json.loads(line) for line in lines]),
             "encode_mb_per_s": megabytes / fastest(lambda: [json.dumps(v, ensure_ascii=False) for v in values])}]
    try:
        import orjson
    except ImportError:  # not a dependency: pip install orjson to compare it
        print("orjson is not installed: its row is left out")
    else:
        rows.append({"library": f"orjson {orjson.__version__}",
                     "decode_mb_per_s": megabytes / fastest(lambda: [orjson.loads(line) for line in lines]),
                     "encode_mb_per_s": megabytes / fastest(lambda: [orjson.dumps(v) for v in values])})
    rows += [
        {"library": f"msgspec {msgspec.__version__} (typed records)",
         "decode_mb_per_s": megabytes / fastest(lambda: [typed.decode(line) for line in lines]),
         "encode_mb_per_s": megabytes / fastest(lambda: encoder.encode_lines(records))},
    ]
    result = {"date": str(date.today()), "python": platform.python_version(), "command": "python benchmarks/json_codec.py",
              "megabytes": megabytes, "utterances": len(lines), "rows": rows}
    out = ROOT / "benchmarks" / "results" / "json_codec.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    for row in rows:
        print(f"{row['library']:<40} decode {row['decode_mb_per_s']:6.1f} MB/s  encode {row['encode_mb_per_s']:6.1f} MB/s")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
