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
        ci, key = t["ci95"], report["metric"]
        before, after = t["baseline"][key], t["rescored"][key]
        relative = f"{100 * (after - before) / before:+.1f}%" if before else "—"
        lines.append(f"| {label} | {weights} | {d['rescored'][key]:.2f} | {after:.2f} | {relative} "
                     f"| [{ci['low']:+.2f}, {ci['high']:+.2f}] | {held_out(report, key)} |")
    lines.append(f"| oracle | — | {d['oracle'][key]:.2f} | {t['oracle'][key]:.2f} | | — | |")
    head = [f"Tuned on {dev} ({d['utterances']} segments), applied to {test} ({t['utterances']} segments). Held-out "
            f"halves: {dev} split in two at random, tuned on one half, judged on the other (mean ± sd of the change, "
            "how many of the splits improved).", "",
            f"| system | weights | {dev} {metric} | {test} {metric} | {test} Δ rel. | {test} Δ 95% CI "
            f"| {dev} held-out halves Δ |", "|---|---|---|---|---|---|---|"]
    return "\n".join(head + lines) + "\n"


def held_out(report: dict, key: str) -> str:
    """The half-split study of the report's search method, as ``mean ± sd (better/splits)``; empty without one."""
    halves = (report.get("halves") or {}).get(report["search"]["method"])
    if not halves or not halves["deltas"]:
        return ""
    better = -1 if key == "wer" else 1  # WER improves downwards, BLEU upwards
    count = sum(better * delta > 0 for delta in halves["deltas"])
    return f"{halves['mean']:+.2f} ± {halves['std']:.2f} ({count}/{len(halves['deltas'])})"


if __name__ == "__main__":
    exp, dev, test, *pairs = sys.argv[1:]
    text = results(Path(exp), dev, test, dict(p.split("=", 1) for p in pairs))
    write_text(Path(exp) / "results.md", text)
    print(text)
