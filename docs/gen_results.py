"""Write the results pages whose figures come from benchmarks/results/*.json, so that text and data cannot drift.

Each template docs/templates/results/NAME.md becomes docs/results/NAME.md with every ``{{ expression }}`` or
``{{ expression:format }}`` replaced by its value. An expression is Python over the JSON files, each bound to its
file name with ``-`` as ``_`` (``bench_pll_base_cpu.rescorer.hyps_per_s``; keys that are not names by index:
``peers["minicons b=1"]``) and the helpers below (``at(curve, step)``, ``last(curve)``, ``mtok(tokens)``). Negative
numbers are written with a minus sign (−). Each page ends with the list of JSON files its figures came from.

`make docs` runs this before mkdocs; ``--check`` only compares (exit 1 when a page is not what the JSON gives now).
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "results"
TEMPLATES = ROOT / "docs" / "templates" / "results"
PAGES = ROOT / "docs" / "results"
PLACEHOLDER = re.compile(r"\{\{\s*(.+?)\s*\}\}", re.S)
FORMAT_SPEC = re.compile(r"^[<>=^]?[+\- ]?#?0?\d*[,_]?(?:\.\d+)?[bcdeEfFgGnosxX%]?$")


class Node(dict):
    """A JSON object whose keys read as attributes, and which records that its file was read."""

    def __init__(self, value: dict, source: str, used: set[str]):
        super().__init__({k: wrap(v, source, used) for k, v in value.items()})
        self._source, self._used = source, used

    def __getattr__(self, name: str) -> Any:
        try:
            value = self[name]
        except KeyError:
            raise AttributeError(f"{self._source}: no key {name!r} (keys: {', '.join(self)})") from None
        self._used.add(self._source)
        return value

    def __getitem__(self, name: str) -> Any:
        self._used.add(self._source)
        return super().__getitem__(name)


class Records(list):
    """A JSON list (a training curve) that records that its file was read."""

    def __init__(self, value: list, source: str, used: set[str]):
        super().__init__(wrap(v, source, used) for v in value)
        self._source, self._used = source, used

    def __iter__(self):
        self._used.add(self._source)
        return super().__iter__()

    def __getitem__(self, index):
        self._used.add(self._source)
        return super().__getitem__(index)


def wrap(value: Any, source: str, used: set[str]) -> Any:
    if isinstance(value, dict):
        return Node(value, source, used)
    if isinstance(value, list):
        return Records(value, source, used)
    return value


def at(curve: list, step: int) -> Any:
    """The point of a training curve at ``step``."""
    for point in curve:
        if point["step"] == step:
            return point
    raise KeyError(f"no point at step {step}")


def last(curve: list) -> Any:
    """The last point of a training curve."""
    return curve[len(curve) - 1]


def mtok(tokens: float) -> str:
    """Millions of tokens as the tables write them: 0.68M, 2.7M, 16.3M."""
    return f"{tokens / 1e6:.2f}M" if tokens < 1e6 else f"{tokens / 1e6:.1f}M"


HELPERS = {"at": at, "last": last, "mtok": mtok, "min": min, "max": max, "round": round, "len": len, "format": format,
           "math": math}


def load(used: set[str]) -> dict[str, Any]:
    """Every JSON file of benchmarks/results, by name (``-`` → ``_``)."""
    data = {}
    for path in sorted(DATA.glob("*.json")):
        # Bare NaN (a curve's first training loss) is valid for Python's json module.
        data[path.stem.replace("-", "_")] = wrap(json.loads(path.read_text(encoding="utf-8")), path.name, used)
    return data


def show(value: Any, spec: str) -> str:
    """A value formatted with ``spec``; numbers below zero with a minus sign."""
    text = format(value, spec) if spec else str(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and text.startswith("-"):
        text = "−" + text[1:]
    return text


def gpu_run(used: set[str]) -> str:
    """The table of the one-call GPU run (benchmarks/results/gpu.json, written by ``bash benchmarks/gpu.sh``)."""
    path = DATA / "gpu.json"
    if not path.exists():
        return ("*No GPU run has been committed yet: `bash benchmarks/gpu.sh OUT` on a CUDA machine writes "
                "OUT/gpu.json; commit it as `benchmarks/results/gpu.json` (`benchmarks/README.md`).*")
    sys.path.insert(0, str(ROOT))
    from rescorer.benchmark.gpu.table import markdown

    used.add(path.name)
    return markdown(json.loads(path.read_text(encoding="utf-8")))


def fill(template: Path) -> str:
    """The page a template gives with the JSON files as they are now."""
    used: set[str] = set()
    names = {**HELPERS, **load(used), "gpu_run": lambda: gpu_run(used)}
    text = template.read_text(encoding="utf-8")

    def one(match: re.Match) -> str:
        expression, spec = match.group(1), ""
        head, sep, tail = expression.rpartition(":")
        if sep and FORMAT_SPEC.match(tail.strip()) and not tail.strip().startswith(("/", " ")):
            expression, spec = head, tail.strip()
        line = text.count("\n", 0, match.start()) + 1
        try:
            value = eval(expression, {"__builtins__": {}, **names})  # noqa: S307 — the repository's own templates
        except Exception as err:  # a typo in a template: name it with its line
            where = template.relative_to(ROOT) if template.is_relative_to(ROOT) else template
            raise SystemExit(f"{where}:{line}: {{{{ {match.group(1)} }}}}: {err}") from None
        return show(value, spec)

    body = PLACEHOLDER.sub(one, text).rstrip()
    sources = ", ".join(f"`benchmarks/results/{name}`" for name in sorted(used))
    head = (f"<!-- Generated by docs/gen_results.py from docs/templates/results/{template.name} and "
            "benchmarks/results/*.json: edit those, not this page. -->\n\n")
    tail = f"\n\n---\n\nThe figures on this page are read from {sources} by `docs/gen_results.py`.\n" if used else "\n"
    return head + body + tail


def pages() -> dict[Path, str]:
    """Every generated page and its text."""
    return {PAGES / template.name: fill(template) for template in sorted(TEMPLATES.glob("*.md"))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 when a page differs")
    args = parser.parse_args()
    stale = []
    for page, text in pages().items():
        if page.exists() and page.read_text(encoding="utf-8") == text:
            continue
        stale.append(page)
        if not args.check:
            page.parent.mkdir(parents=True, exist_ok=True)
            page.write_text(text, encoding="utf-8")
            print(f"wrote {page.relative_to(ROOT)}")
    if args.check and stale:
        print("not what benchmarks/results/*.json gives now: " + ", ".join(str(p.relative_to(ROOT)) for p in stale)
              + " (run python docs/gen_results.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
