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
from ..files import write_text
from ..types import Hypothesis, NBest, Utterance
from .common import parse_score, read_lines, text_lines
from .format import Sample
from .target import Target

SEP = "|||"
_LABEL = re.compile(r"^(\S+?)([=:])(\S*)$")
_INDEXED = re.compile(r"^(.+)_(\d+)$")


def looks_like(lines: list[str]) -> bool:
    first = next((line for line in lines if line.strip()), "")
    fields = first.split(SEP)
    return len(fields) >= 4 and fields[0].strip().isdigit()


def detect(sample: Sample) -> bool:
    """Moses-style ``id ||| text ||| features ||| total`` lines."""
    return looks_like(sample.lines)


def detect_marian(sample: Sample) -> bool:
    """Marian's: Moses-style lines whose features are labelled ``F0=``, … (asked before Moses)."""
    return "F0=" in sample.first and looks_like(sample.lines)


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
        if values:  # an empty feature field has no label style
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
    style = styles.pop() if styles else "none"
    utts = [Utterance(sid, tuple(hyps), origin=origin) for sid, hyps, origin in utterances]  # type: ignore[misc]
    return NBest(utts, fmt="marian" if marian else "moses", meta={"labels": style}, source=str(path))


def _groups(columns: dict[str, str]) -> list[tuple[str, list[str]]]:
    """(label, values): ``x_0, x_1, …`` (from 0, consecutive, in order) share label ``x``, as the reader splits them."""
    names, groups, i = list(columns), [], 0
    while i < len(names):
        match = _INDEXED.match(names[i])
        run = 1
        if match and match.group(2) == "0":
            while i + run < len(names) and names[i + run] == f"{match.group(1)}_{run}":
                run += 1
        groups.append((match.group(1) if run > 1 else names[i], [columns[n] for n in names[i : i + run]]))
        i += run
    return groups


def _feature_field(columns: dict[str, str], style: str, glued: bool) -> str:
    if style == "none":
        return " ".join(columns.values())
    mark = ":" if style == "colon" else "="
    parts = []
    for label, values in _groups(columns):
        if glued and len(values) == 1:
            parts.append(f"{label}{mark}{values[0]}")
        else:
            parts.append(f"{label}{mark} {' '.join(values)}")
    return " ".join(parts)


def _unlabelled(rows: list[dict[str, str]]) -> bool:
    """Whether every feature list is ``f_0, f_1, …``, the names the reader gives unlabelled values."""
    return all(list(row) == [f"f_{i}" for i in range(len(row))] for row in rows)


def write(nbest: NBest, path: str | Path, style: str = "moses", score_column: str | None = None) -> None:
    """Write ``id ||| text ||| features ||| total``: the overall column (:class:`Target`; ``total`` first) is the
    total, every other column a labelled feature; ``style="marian"`` glues single values (``F0=-3.1``)."""
    target = Target.of(nbest, style, path, score_column, overall_name="total")
    rows = []
    for utt in nbest:
        for hyp in utt.hyps:
            total = target.value(utt, hyp, target.overall(utt, hyp))
            features = {c: target.value(utt, hyp, c) for c in target.others(utt, hyp)}
            rows.append((utt.id, hyp, features, total))
    labels = target.meta(nbest.meta).get("labels", "equals")
    if labels == "none" and not _unlabelled([features for _, _, features, _ in rows]):
        labels = "equals"
    lines = []
    for sid, hyp, features, total in rows:
        meta = target.meta(hyp.meta)
        fields = [sid, hyp.text, *([meta["before"]] if "before" in meta else [])]
        fields += [_feature_field(features, labels, glued=style == "marian"), total]
        fields += [meta["after"]] if "after" in meta else []
        lines.append(f" {SEP} ".join(fields))
    write_text(path, text_lines(lines, path))
