"""Reports: report.json (machine-readable), report.md and a terminal table, written atomically."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence, Tuple, Union

from rich.console import Console
from rich.table import Table

from .io.common import write_text


Column = Union[str, Tuple[str, str]]  # a report key path (``baseline.wer``), or (key path, header in words)


def write_report(out_dir: str | Path, report: Mapping[str, Any], columns: Sequence[Column], title: str,
                 key: str = "sets", notes: Sequence[str] = ()) -> Path:
    """Write ``report.json`` and ``report.md`` under ``out_dir``, print the table (a row per entry of
    ``report[key]``: sets, methods, …) and the ``notes`` lines after it, return the JSON path."""
    out = Path(out_dir)
    rows = table_rows(report, [c if isinstance(c, str) else c[0] for c in columns], key)
    headers = [c if isinstance(c, str) else c[1] for c in columns]
    write_text(out / "report.json", json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    body = markdown(report, headers, rows, title, key.removesuffix("s"))
    if notes:
        head, _, rest = body.partition("\n\n")
        body = head + "\n\n```text\n" + "\n".join(notes) + "\n```\n\n" + rest
    write_text(out / "report.md", body)
    print_table(rows, headers, title, report.get("signature", ""), key.removesuffix("s"))
    for line in notes:
        print(line)
    return out / "report.json"


def table_rows(report: Mapping[str, Any], columns: Sequence[str], key: str = "sets") -> list[list[str]]:
    rows = []
    for name, entry in report[key].items():
        cells = [name]
        for column in columns:
            value = entry
            for key in column.split("."):
                value = value.get(key, "") if isinstance(value, Mapping) else ""
            cells.append(f"{value:.2f}" if isinstance(value, float) else str(value))
        rows.append(cells)
    return rows


def markdown(report: Mapping[str, Any], columns: Sequence[str], rows: list[list[str]], title: str,
             first: str = "set") -> str:
    header = [first, *columns]
    lines = [f"# {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    lines += ["", f"Signature: `{report.get('signature', '')}`", ""]
    return "\n".join(lines)


def print_table(rows: list[list[str]], columns: Sequence[str], title: str, signature: str, first: str = "set") -> None:
    table = Table(title=title, caption=signature)
    table.add_column(first)
    for column in columns:
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(*row)
    Console(width=max(110, 14 * len(columns) + 24)).print(table)
