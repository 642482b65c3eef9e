"""Moses and Marian ``id ||| text ||| features ||| total`` n-best lists (formats-reference §4).

Every feature value becomes a column: a label with one value keeps its name
(``lm``, ``F0``), a label with several gets ``_0``, ``_1``… (``tm_0``…); the total
is the ``total`` column. Moses puts extra fields after the total, Marian before
the features; both are kept verbatim.
"""
from __future__ import annotations

import re
from pathlib import Path

from ..errors import NBestFormatError
from ..types import Hypothesis, NBest, Utterance
from .common import format_number, parse_score, read_lines, write_text

SEP = "|||"
_LABEL = re.compile(r"^(\S+?)([=:])(\S*)$")
_INDEXED = re.compile(r"^(.+)_(\d+)$")


def looks_like(lines: list[str]) -> bool:
    first = next((line for line in lines if line.strip()), "")
    fields = first.split(SEP)
    return len(fields) >= 4 and fields[0].strip().isdigit()


def _is_number(field: str) -> bool:
    try:
        float(field)
    except ValueError:
        return False
    return True


def _split_fields(line: str, path: Path, number: int) -> tuple[str, str, list[str], str, str, list[str]]:
    """→ id, text, fields before features (Marian), features, total, fields after total (Moses)."""
    fields = [f.strip() for f in line.split(SEP)]
    if len(fields) < 4:
        raise NBestFormatError(path, number, f"truncated line: expected 4 '{SEP}'-separated fields, found {len(fields)}", line)
    sid, text = fields[0], fields[1]
    if not sid.isdigit():
        raise NBestFormatError(path, number, "sentence id is not a non-negative integer", sid)
    if len(fields) == 4 or _is_number(fields[3]):
        return sid, text, [], fields[2], fields[3], fields[4:]
    return sid, text, fields[2:-2], fields[-2], fields[-1], []


def _features(field: str, path: Path, number: int) -> tuple[dict[str, float], dict[str, str], str]:
    """Parse ``d: 0 -1.5 lm: -36`` / ``F0= -2.4 F1=-2.9`` / ``-1 -2`` → values, raw, label style."""
    groups: list[tuple[str, list[str]]] = []
    style = "none"
    for token in field.split():
        match = _LABEL.match(token)
        if match and not _is_number(token):
            style = "colon" if match.group(2) == ":" else "equals"
            groups.append((match.group(1), [match.group(3)] if match.group(3) else []))
        elif groups and style != "none":
            groups[-1][1].append(token)
        else:
            if not groups:
                groups.append(("f", []))
            groups[-1][1].append(token)
    values, raw = {}, {}
    for label, items in groups:
        if not items:
            raise NBestFormatError(path, number, "feature label without a value", label)
        for index, item in enumerate(items):
            name = label if len(items) == 1 and style != "none" else f"{label}_{index}"
            if name in values:
                raise NBestFormatError(path, number, "feature appears twice", name)
            values[name] = parse_score(item, path, number, name)
            raw[name] = item
    return values, raw, style


def read(path: str | Path) -> NBest:
    path = Path(path)
    utterances: list[Utterance] = []
    seen: set[str] = set()
    current: tuple[str, list[Hypothesis], str] | None = None
    styles = set()
    marian = False
    for number, line in enumerate(read_lines(path), 1):
        if not line.strip():
            raise NBestFormatError(path, number, "blank line")
        sid, text, before, feats, total, after = _split_fields(line, path, number)
        values, raw, style = _features(feats, path, number)
        styles.add(style)
        marian = marian or bool(before) or any(re.fullmatch(r"F\d+", k) for k in values)
        values["total"] = parse_score(total, path, number, "total")
        raw["total"] = total
        meta = {}
        if before:
            meta["before"] = f" {SEP} ".join(before)
        if after:
            meta["after"] = f" {SEP} ".join(after)
        hyp = Hypothesis(text, values, raw, meta=meta)
        if current is None or current[0] != sid:
            if sid in seen:
                raise NBestFormatError(path, number, "sentence id appears in two separate blocks", sid)
            seen.add(sid)
            current = (sid, [], f"{path}:{number}")
            utterances.append(current)  # type: ignore[arg-type]
        current[1].append(hyp)
    if len(styles) > 1:
        raise NBestFormatError(path, None, "mixed feature label styles", sorted(styles))
    style = styles.pop()
    utts = [Utterance(sid, tuple(hyps), origin=origin) for sid, hyps, origin in utterances]  # type: ignore[misc]
    return NBest(utts, fmt="marian" if marian else "moses", meta={"labels": style}, source=str(path))


def _feature_field(hyp: Hypothesis, style: str, glued: bool) -> str:
    groups: dict[str, list[str]] = {}
    for name, value in hyp.scores.items():
        if name == "total":
            continue
        text = hyp.raw.get(name) or format_number(value)
        match = _INDEXED.match(name)
        grouped = match and (style == "none" or {f"{match.group(1)}_0", f"{match.group(1)}_1"} <= hyp.scores.keys())
        label = match.group(1) if grouped else name
        groups.setdefault(label, []).append(text)
    if style == "none":
        return " ".join(v for values in groups.values() for v in values)
    mark = ":" if style == "colon" else "="
    parts = []
    for label, values in groups.items():
        if glued and len(values) == 1:
            parts.append(f"{label}{mark}{values[0]}")
        else:
            parts.append(f"{label}{mark} {' '.join(values)}")
    return " ".join(parts)


def write(nbest: NBest, path: str | Path, style: str = "moses") -> None:
    """Write the list back; ``style="marian"`` glues single values (``F0=-3.1``)."""
    labels = nbest.meta.get("labels", "equals")
    lines = []
    for utt in nbest:
        for hyp in utt.hyps:
            total = hyp.raw.get("total") or format_number(hyp.scores.get("total", 0.0))
            fields = [utt.id, hyp.text]
            if "before" in hyp.meta:
                fields.append(hyp.meta["before"])
            fields += [_feature_field(hyp, labels, glued=style == "marian"), total]
            if "after" in hyp.meta:
                fields.append(hyp.meta["after"])
            lines.append(f" {SEP} ".join(fields))
    write_text(path, "".join(f"{line}\n" for line in lines))
