"""The BLiMP recipe's last stage: every stage's minimal-pair report as one markdown table (``EXP/results.md``).

usage: python recipes/blimp/table.py EXP STAGE [STAGE ...]   (each STAGE is a folder EXP/STAGE holding report.json)
Rows: method (scorer.method), pairs, accuracy % (± spread over templates), r(correct, length difference), the
seconds of scoring it needed; then one column per phenomenon (short names).
"""
import json
import sys
from pathlib import Path

from rescorer.files import write_text


def table(exp: Path, stages: list[str]) -> str:
    reports = {stage: json.loads((exp / stage / "report.json").read_text()) for stage in stages}
    phenomena = sorted({p for r in reports.values() for m in r["methods"].values() for p in m["phenomena"]})
    head = ["stage", "method", "pairs", "accuracy", "r(len)", "seconds", *(p[:12] for p in phenomena)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for stage, report in reports.items():
        for name, m in report["methods"].items():
            accuracy = f"{m['accuracy']:.1f}" + (f" ± {m['spread']:.1f}" if m["spread"] else "")
            r = "—" if m["length_corr"] is None else f"{m['length_corr']:+.2f}"
            cells = [stage, name, f"{m['pairs']:,}", accuracy, r, f"{m['seconds']:,.0f}",
                     *(f"{m['phenomena'][p]:.1f}" if p in m["phenomena"] else "" for p in phenomena)]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    exp, *stages = sys.argv[1:]
    text = table(Path(exp), stages)
    write_text(Path(exp) / "results.md", text)
    print(text)
