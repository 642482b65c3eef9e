"""Text from inputs and configs reaches people only inert: no terminal control sequence, no live Markdown or HTML,
no rich markup, in the terminal, report.md and report.html; the data files keep the text unchanged."""
from __future__ import annotations

import json
import re
import typing
from dataclasses import fields
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

import rescorer
from rescorer.changes import changed
from rescorer.report import Report
from rescorer.report.data import Record
from rescorer.report.html import html_page
from rescorer.safetext import code, fenced, for_markdown, visible

ESCAPES = ["\x1b]0;pwned\x07", "\x1b[2J", "\x1b[31mred\x1b[0m", "\u202eevil", "a\u2028b", "\x9b31m"]
MARKUP = ["<img src=x onerror=alert(1)>", "a | b | c", "```", "`tick`", "[bold red]X[/bold red]", "[/x]", "**b**"]
PAYLOADS = ESCAPES + MARKUP
CONTROLS = ("\x1b", "\x07", "\x9b", "\u202e", "\u2028")  # what a terminal acts on
ACTIVE = (*CONTROLS, "<img src=x")  # and what a Markdown or HTML page acts on
FIELD = '<script>alert(1)</script> "><img src=x onerror=1> \'&amp;\x1b]0;pwned\x07\u202e'  # every field, every name
WITHOUT_MARKUP = str.maketrans({"<": "‹", ">": "›", '"': "”", "'": "’", "&": "＆"})  # look-alikes HTML does not act on


def hostile_list(path: Path) -> Path:
    """Seven utterances whose ids, references and hypotheses carry the payloads; the LM column `lm` prefers the
    second hypothesis, so re-ranking changes 1-bests and the examples show the payloads."""
    lines = []
    for k, payload in enumerate(PAYLOADS):
        hyps = [{"text": f"one {payload} two", "scores": {"am": -1.0, "lm": -9.0}},
                {"text": f"one {payload} three", "scores": {"am": -1.5, "lm": -1.0}}]
        lines.append(json.dumps({"id": f"u{k}-{''.join(payload.split())}", "ref": f"one {payload} three", "hyps": hyps}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_hostile_names_and_texts_reach_the_terminal_and_the_reports_inert(tmp_path, capsys, terminal):
    source = hostile_list(tmp_path / "in.jsonl")
    before = source.read_bytes()
    name = "[bold red]X[/bold red]<img src=x onerror=alert(1)>[/x]\x1b[2J"
    column = "lm"
    result = rescorer.rescore(sets={"dev": str(source)}, base="am", columns={column: {"range": [0, 1], "step": 0.5}},
                              out_dir=tmp_path / "out", data=name, bootstrap=20)
    shown = capsys.readouterr()
    terminal = shown.out + shown.err
    assert result.report.sets["dev"].changed_1best > 0
    assert not any(bad in terminal for bad in CONTROLS), [bad for bad in CONTROLS if bad in terminal]
    assert name.replace("\x1b", "\\x1b") in terminal and "\\x1b]0;pwned\\x07" in terminal  # shown, not applied
    page = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert not any(bad in page for bad in ACTIVE)
    assert "# \\[bold red\\]X\\[/bold red\\]&lt;img src=x onerror=alert(1)&gt;\\[/x\\]\\\\x1b\\[2J: " in page
    fence = re.match(r"(`{3,})text$", page.split("\n\n")[1].splitlines()[0]).group(1)
    block = page.split(fence + "text\n", 1)[1].split("\n" + fence + "\n", 1)[0]
    assert all(len(run) < len(fence) for run in re.findall("`+", block))  # no line inside closes the block early
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert not any(bad in html for bad in ACTIVE) and "&lt;img src=x" in html
    assert source.read_bytes() == before
    written = (tmp_path / "out" / "dev.jsonl").read_text(encoding="utf-8")
    assert "\x1b]0;pwned\x07" in written or "\\u001b]0;pwned\\u0007" in written  # the data keep the text


@pytest.mark.parametrize("text", PAYLOADS)
def test_each_way_of_showing_text_leaves_nothing_active(text):
    for shown in (visible(text), for_markdown(text), code(text), fenced([text, "after"])):
        assert not any(c in shown for c in "\x1b\x07\x9b\u202e\u2028")
    assert "<" not in for_markdown(text)
    assert not re.search(r"(?<!\\)[|`\[\]*]", for_markdown(text))  # table cells, code, links and emphasis escaped
    block = fenced([text, "after"]).splitlines()
    assert block[0].startswith(block[-1]) and all(not line.startswith(block[-1]) for line in block[1:-1])
    assert visible("plain words, é, 中文") == "plain words, é, 中文"


def test_a_number_that_rounds_to_zero_never_shows_a_minus_sign():
    from rescorer.safetext import number

    assert [number(-0.001), number(-0.001, "+.2f"), number(-0.0), number(-0.0001, ".1%")] == ["0.00", "+0.00", "0.00",
                                                                                               "0.0%"]
    assert [number(-0.005001), number(-0.5, "+.2f"), number(0.004, "+.2f")] == ["-0.01", "-0.50", "+0.00"]


def test_a_bundle_shows_the_tuned_path_and_out_dir_inert(tmp_path, capsys, terminal):
    from rescorer.tuned.bundle import bundle

    source = hostile_list(tmp_path / "in.jsonl")
    hostile = tmp_path / "\x1b]0;pwned\x07run\x1b[2J"
    rescorer.rescore(sets={"dev": str(source)}, base="am", columns={"lm": {"range": [0, 1], "step": 0.5}},
                     out_dir=hostile, bootstrap=1, retune=None)
    capsys.readouterr()
    bundle(hostile / "tuned.yaml", tmp_path / "bundle\x1b[31m")
    terminal = capsys.readouterr()
    shown = terminal.out + terminal.err
    assert "bundled" in shown and not any(bad in shown for bad in CONTROLS), shown
    assert "\\x1b]0;pwned\\x07run\\x1b[2J" in shown and "bundle\\x1b[31m" in shown  # shown, not applied


def filled(kind: Any, text: str) -> Any:
    """A value of type ``kind`` with every field of every record given, one entry in every mapping and list, and
    every string and mapping key ``text`` (numbers 1 or 0.5, flags true)."""
    if typing.get_origin(kind) is typing.Union:
        kind = next(arg for arg in typing.get_args(kind) if arg is not type(None))
    if isinstance(kind, type) and issubclass(kind, Record):
        hints = typing.get_type_hints(kind)
        return kind(**{f.name: filled(hints[f.name], text) for f in fields(kind)})
    if typing.get_origin(kind) is dict:
        return {text: filled(typing.get_args(kind)[1], text)}
    if typing.get_origin(kind) is list:
        return [filled(typing.get_args(kind)[0], text)]
    return {bool: True, int: 1, float: 0.5}.get(kind, text)


def report_page(text: str, task: str | None) -> str:
    """report.html of a report whose every field and name is ``text`` (its task ``task`` where given), with changed
    utterances whose ids, references and hypotheses carry ``text``, in the report's set and in a set of its own."""
    report = filled(Report, text).to_json()
    report["task"] = task or report["task"]
    changes = {text: changed([f"u1 {text}", f"u2 {text}"], [f"a {text} b", text], [f"a {text} c", "x"],
                             [f"a {text} c", f"{text} y"]),
               f"{text} without references": changed([f"u3 {text}"], [f"{text} b"], [f"c {text}"], None)}
    return html_page(report, changes, b"\x89PNG\r\n\x1a\n")


class Page(HTMLParser):
    """A page as browsers read it: its elements in order (tag and attribute names), and the text it shows (element
    text and attribute values; scripts and styles left out)."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, tuple[str, ...]]] = []
        self.texts: list[str] = []
        self.code = False
        self.feed(page)
        self.close()
        self.text = "\n".join(self.texts)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, tuple(name for name, _ in attrs)))
        self.texts += [value or "" for _, value in attrs]
        self.code = tag in ("script", "style")

    def handle_endtag(self, tag: str) -> None:
        self.code = False

    def handle_data(self, data: str) -> None:
        if not self.code:
            self.texts.append(data)


@pytest.mark.parametrize("task", [None, "apply"])  # apply: the tuned file is shown too
def test_every_field_of_the_report_reaches_the_page_as_text(task):
    assert all(f.name in filled(Report, FIELD).to_json() for f in fields(Report))  # every field, omitted or not
    page = report_page(FIELD, task)
    hostile, inert = Page(page), Page(report_page(FIELD.translate(WITHOUT_MARKUP), task))
    assert hostile.elements == inert.elements  # no element or attribute but the template's own
    assert hostile.text.translate(WITHOUT_MARKUP) == inert.text.translate(WITHOUT_MARKUP)  # shown as it is
    assert "<script>alert(1)</script> \"><img src=x onerror=1>" in hostile.text and "\\x1b]0;pwned\\x07" in hostile.text
    assert page.count("<script") == 2 and page.count("<img") == 1  # the page's own two scripts and the plot
    assert not any(c in page for c in CONTROLS)


def test_a_lone_surrogate_is_shown_as_its_escape_so_that_any_terminal_can_print_it():
    """A text decoded from a ``\\ud800`` escape (a YAML file, a model's config) holds half a UTF-16 pair, which no
    encoding can write: printing it raised instead of saying the error it is in."""
    for shown in (visible("model a\ud800b"), for_markdown("a\udc80"), code("\ud83d")):
        shown.encode("utf-8")
    assert visible("model a\ud800b") == "model a\\ud800b"
