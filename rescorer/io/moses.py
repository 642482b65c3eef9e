"""Moses and Marian ``id ||| text ||| features ||| total`` n-best lists (formats-reference §4).

Every feature value becomes a column: a label with one value keeps its name
(``lm``, ``F0``), a label with several gets ``_0``, ``_1``… (``tm_0``…); the total
is the ``total`` column. Moses puts extra fields after the total, Marian before
the features; both are kept verbatim.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator

from ..errors import NBestFormatError
from ..types import Hypothesis, NBest, Utterance
from .seen import Seen
from .common import blocks_of, iter_lines, line_writer, parse_score
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


def blocks(path: str | Path, size: int = 0) -> Iterator[NBest]:
    """The list as blocks of ``size`` utterances, read a line at a time. The first line says what the list is: Moses
    or Marian (fields before the features, ``F0``-style labels), and its label style (later lines with features
    must share it)."""
    path = Path(path)
    facts: dict[str, str] = {}

    def nbest(utterances: list[Utterance]) -> NBest:
        return NBest(utterances, fmt=facts.get("fmt", "moses"), meta={"labels": facts.get("labels", "none")},
                     source=str(path))
    yield from blocks_of(_utterances(path, facts), size, nbest)


def _utterances(path: Path, facts: dict[str, str]) -> Iterator[Utterance]:
    """The utterances of a Moses/Marian file, the lines of each together (an id that comes back is refused);
    ``facts``: the list's format and label style, from its first line."""
    seen = Seen()
    sid, hyps, origin, blank = "", [], "", None
    for number, line in iter_lines(path):
        if not line.strip():
            if hyps:
                raise NBestFormatError(path, number, "blank line")
            blank = blank or number  # blank lines alone are an empty file
            continue
        if blank:
            raise NBestFormatError(path, blank, "blank line")
        found, hyp, style = _hypothesis(line, path, number)
        if not facts:
            marian = "before" in hyp.meta or any(re.fullmatch(r"F\d+", k) for k in hyp.scores)
            facts.update(fmt="marian" if marian else "moses", labels=style)
        elif len(hyp.scores) > 1 and style != facts["labels"]:  # an empty feature field has no label style
            raise NBestFormatError(path, number, "mixed feature label styles", sorted({style, facts["labels"]}))
        if found != sid or not hyps:
            if hyps:
                yield Utterance(sid, tuple(hyps), origin=origin)
            if found in seen:
                raise NBestFormatError(path, number, "sentence id appears in two separate blocks", found)
            seen.add(found)
            sid, hyps, origin = found, [], f"{path}:{number}"
        hyps.append(hyp)
    if hyps:
        yield Utterance(sid, tuple(hyps), origin=origin)


def _hypothesis(line: str, path: Path, number: int) -> tuple[str, Hypothesis, str]:
    """The sentence id, hypothesis and label style of line ``number``."""
    sid, text, before, feats, total, after = _split_fields(line, path, number)
    values, raw, style = _features(feats, path, number)
    values["total"] = parse_score(total, path, number, "total")
    raw["total"] = total
    meta = {}
    if before:
        meta["before"] = f" {SEP} ".join(before)
    if after:
        meta["after"] = f" {SEP} ".join(after)
    return sid, Hypothesis(text, values, raw, meta=meta), style


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
    with writer(path, nbest, style, score_column) as put:
        put(nbest)


def writer(path: str | Path, like: NBest, style: str = "moses", score_column: str | None = None
           ) -> ContextManager[Callable[[NBest], None]]:
    """A writer of the blocks of a list like ``like`` (see :func:`write`). Features are written unlabelled only where
    the list was read so and the first block's are ``f_0, f_1, …``; a later block whose features are not is
    refused."""
    target = Target.of(like, style, path, score_column, overall_name="total")
    state: dict[str, Any] = {"labels": target.meta(like.meta).get("labels", "equals"), "written": False}

    def lines(block: NBest) -> Iterator[str]:
        rows = []
        for utt in block:
            for hyp in utt.hyps:
                total = target.value(utt, hyp, target.overall(utt, hyp))
                features = {c: target.value(utt, hyp, c) for c in target.others(utt, hyp)}
                rows.append((utt, hyp, features, total))
        named = next((row for row in rows if not _unlabelled([row[2]])), None)
        if state["labels"] == "none" and named is not None:
            if state["written"]:
                raise NBestFormatError(path, None, f"the features of {named[0].id!r} have names, but the lines "
                                       "before them were written without", sorted(named[2]))
            state["labels"] = "equals"
        state["written"] = state["written"] or bool(rows)
        for utt, hyp, features, total in rows:
            meta = target.meta(hyp.meta)
            fields = [utt.id, hyp.text, *([meta["before"]] if "before" in meta else [])]
            fields += [_feature_field(features, state["labels"], glued=style == "marian"), total]
            fields += [meta["after"]] if "after" in meta else []
            yield f" {SEP} ".join(fields)
    return line_writer(path, lines)
