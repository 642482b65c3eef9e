"""Reports: report.json (machine-readable), report.md and a terminal table, written atomically."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any, Mapping, Sequence, Tuple, Union

import numpy as np
from rich.table import Table
from rich.text import Text

from ..log import info, rendered
from ..files import write_text
from ..safetext import code, fenced, for_markdown, number, visible


Column = Union[str, Tuple[str, str]]  # a report key path (``baseline.wer``), or (key path, header in words)


def write_report(out_dir: str | Path, report: Mapping[str, Any], columns: Sequence[Column], title: str,
                 key: str = "sets", notes: Sequence[str] = (), shown: int | None = None) -> Path:
    """Write ``report.md`` and then ``report.json`` under ``out_dir``, print the table (a row per entry of
    ``report[key]``: sets, methods, …; on the terminal the first ``shown`` rows, if given, and how many more
    report.md has) and the ``notes`` lines after it, return the JSON path."""
    out = Path(out_dir)
    rows = table_rows(report, [c if isinstance(c, str) else c[0] for c in columns], key)
    headers = [c if isinstance(c, str) else c[1] for c in columns]
    body = markdown(report, headers, rows, title, key.removesuffix("s"))
    if notes:
        head, _, rest = body.partition("\n\n")
        body = head + "\n\n" + fenced(list(notes)) + "\n\n" + rest
    write_text(out / "report.md", body)
    write_text(out / "report.json", report_json(report))  # last: a staged run holding it is finished
    more = len(rows) - shown if shown is not None and len(rows) > shown else 0
    printed = rows[: len(rows) - more] + ([[f"… {more:,} more in report.md", *[""] * len(headers)]] if more else [])
    print_table(printed, headers, title, report.get("signature", ""), key.removesuffix("s"))
    for line in notes:
        info(visible(line))
    return out / "report.json"


def report_json(report: Mapping[str, Any]) -> str:
    """``report`` as strict JSON: a NaN or infinite number (which JSON cannot hold) is written as null, and
    ``non_finite`` records where each was and what it held (``{"halves.fast.mean": "nan"}``)."""
    replaced: dict[str, str] = {}
    safe = json_safe(report, "", replaced)
    if replaced:
        safe["non_finite"] = replaced
    return json.dumps(safe, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def json_safe(value: Any, path: str, replaced: dict[str, str]) -> Any:
    """``value`` with numpy scalars as Python numbers and non-finite floats as None (noted in ``replaced`` under
    their key path)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        replaced[path] = str(value)
        return None
    if isinstance(value, Mapping):
        return {key: json_safe(item, f"{path}.{key}" if path else str(key), replaced) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item, f"{path}[{k}]", replaced) for k, item in enumerate(value)]
    return value


def table_rows(report: Mapping[str, Any], columns: Sequence[str], key: str = "sets") -> list[list[str]]:
    rows = []
    for name, entry in report[key].items():
        cells = [name]
        for column in columns:
            value = entry
            for key in column.split("."):
                value = value.get(key, "") if isinstance(value, Mapping) else ""
            cells.append(number(value) if isinstance(value, float) else str(value))
        rows.append(cells)
    return rows


def markdown(report: Mapping[str, Any], columns: Sequence[str], rows: list[list[str]], title: str,
             first: str = "set") -> str:
    """The report as Markdown; every name and value from the input or the config is shown literally."""
    header = [first, *columns]
    lines = [f"# {for_markdown(title)}", "", "| " + " | ".join(map(for_markdown, header)) + " |",
             "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(for_markdown, row)) + " |" for row in rows]
    lines += ["", f"Signature: {code(report.get('signature', ''))}", ""]
    return "\n".join(lines)


def print_table(rows: list[list[str]], columns: Sequence[str], title: str, signature: str, first: str = "set") -> None:
    """The table on the terminal, as wide as the terminal (``COLUMNS``; cells wrap, the table never breaks), then
    the signature on a line of its own; names and values are plain text to rich (never markup), controls made
    visible."""
    width = shutil.get_terminal_size(fallback=(0, 0)).columns or max(110, 14 * len(columns) + 24)
    table = Table(title=Text(visible(title)), padding=(0, 1) if width >= 100 else (0, 0))
    table.add_column(Text(visible(first)), no_wrap=True)  # a name is never cut; headers wrap between words
    for column in columns:
        table.add_column(Text(visible(column)), justify="right", overflow="fold")
    for row in rows:
        table.add_row(*(Text(visible(cell)) for cell in row))
    info(rendered(table, width))
    if signature:
        info(visible(signature))
