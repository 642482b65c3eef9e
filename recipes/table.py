"""The last stage of a recipe: its systems' rescore reports as one markdown table (``EXP/results.md``).

usage: python recipes/table.py EXP DEV TEST SYSTEM=LABEL [SYSTEM=LABEL ...]
(each SYSTEM is a folder EXP/tune/SYSTEM holding a rescore report.json)
"""
import json
import sys
from pathlib import Path

from rescorer.files import write_text


def results(exp: Path, dev: str, test: str, systems: dict[str, str]) -> str:
    lines = []
    for name, label in systems.items():
        report = json.loads((exp / "tune" / name / "report.json").read_text())
        metric = report["metric"].upper()
        d, t = report["sets"][dev], report["sets"][test]
        weights = ", ".join(f"{k} {v:g}" for k, v in report["weights"].items()) or "—"
        ci = t["ci95"]
        lines.append(f"| {label} | {weights} | {d['rescored'][report['metric']]:.2f} "
                     f"| {t['rescored'][report['metric']]:.2f} | [{ci['low']:+.2f}, {ci['high']:+.2f}] |")
    key = report["metric"]
    lines.append(f"| oracle | — | {d['oracle'][key]:.2f} | {t['oracle'][key]:.2f} | — |")
    head = [f"Tuned on {dev} ({d['utterances']} segments), applied to {test} ({t['utterances']} segments).", "",
            f"| system | weights | {dev} {metric} | {test} {metric} | {test} Δ 95% CI |", "|---|---|---|---|---|"]
    return "\n".join(head + lines) + "\n"


if __name__ == "__main__":
    exp, dev, test, *pairs = sys.argv[1:]
    text = results(Path(exp), dev, test, dict(p.split("=", 1) for p in pairs))
    write_text(Path(exp) / "results.md", text)
    print(text)
