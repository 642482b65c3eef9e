"""What a format is lives in one registry (rescorer.io.formats): the rest of the package asks its record, and a new
toolkit is one reader/writer and one entry."""
from __future__ import annotations

import ast
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

import rescorer
from rescorer.io import FORMATS, REGISTRY, Format, Sample, register, whole
from rescorer.io.formats import facts

PACKAGE = Path(rescorer.__file__).parent


def string_literals(path: Path) -> list[tuple[int, str]]:
    return [(node.lineno, node.value) for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def test_no_format_is_named_outside_io():
    """Outside ``io/`` a format name is never a string literal: code asks the format's record instead (the one
    exception: ``types.CANONICAL``, the default format of a hand-built list, which ``io`` imports)."""
    names = set(REGISTRY)
    found = [f"{path.relative_to(PACKAGE)}:{line}: {value!r}"
             for path in sorted(PACKAGE.rglob("*.py")) if path.relative_to(PACKAGE).parts[0] != "io"
             for line, value in string_literals(path) if value in names]
    assert len(found) == 1 and found[0].startswith("types.py:"), found


def test_every_registered_format_has_a_reader_a_writer_and_a_base_it_knows():
    for name, fmt in REGISTRY.items():
        assert fmt.name == name and callable(fmt.read) and callable(fmt.write)
        assert all(isinstance(column, str) and column for column in fmt.base)
    assert {name for name, fmt in REGISTRY.items() if fmt.translation} == {"fairseq", "moses", "marian", "sockeye"}


def read_toy(path: str | Path) -> rescorer.NBest:
    """A toy format: one JSON object per line, ``{"id": …, "hyps": [[text, score], …]}``."""
    utterances = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        utterances.append(rescorer.Utterance(row["id"], tuple(rescorer.Hypothesis(text, {"toy": score})
                                                              for text, score in row["hyps"])))
    return rescorer.NBest(tuple(utterances), fmt="toy", source=str(path))


def write_toy(nbest: rescorer.NBest, path: str | Path) -> None:
    Path(path).write_text("".join(json.dumps({"id": u.id, "hyps": [[h.text, h.scores["toy"]] for h in u.hyps]}) + "\n"
                                  for u in nbest), encoding="utf-8")


def detect_toy(sample: Sample) -> bool:
    """A toy list: its first line is an object of ``id`` and ``hyps`` pairs."""
    head = sample.head
    return head is not None and set(head) == {"id", "hyps"} and all(isinstance(h, list) for h in head["hyps"])


@pytest.fixture
def toy():
    register(Format("toy", whole(read_toy), write_toy, base=("toy",), text_chars="\n"))
    yield REGISTRY["toy"]
    del REGISTRY["toy"]


@pytest.fixture
def lists(tmp_path):
    """A toy list, and a file no format claims."""
    path, unknown = tmp_path / "lists.toy", tmp_path / "notes.txt"
    path.write_text('{"id": "a", "hyps": [["one two", -1.5], ["one too", -2.0]]}\n'
                    '{"id": "b", "hyps": [["three", -0.25]]}\n', encoding="utf-8")
    unknown.write_text("no list here\n", encoding="utf-8")
    return path, unknown


def test_a_new_format_is_one_registry_entry_and_round_trips(toy, lists, tmp_path):
    path = lists[0]
    nbest = rescorer.read_nbest(path, fmt="toy")
    assert [[(h.text, h.scores["toy"]) for h in u.hyps] for u in nbest] == [
        [("one two", -1.5), ("one too", -2.0)], [("three", -0.25)]]
    assert rescorer.io.natural_base(nbest) == "toy" and facts("toy") is toy
    rescorer.write_nbest(nbest, tmp_path / "again.toy")
    assert (tmp_path / "again.toy").read_text(encoding="utf-8") == path.read_text(encoding="utf-8")
    bad = nbest.with_utterances([rescorer.Utterance("c", (rescorer.Hypothesis("a\nb", {"toy": 0.0}),))])
    with pytest.raises(rescorer.NBestFormatError, match="cannot be written as toy"):
        rescorer.write_nbest(bad, tmp_path / "bad.toy")  # the record's own facts are enforced
    assert not (tmp_path / "bad.toy").exists()


def test_a_registered_format_with_detect_is_found_as_a_shipped_one(toy, lists, tmp_path):
    path, unknown = lists
    canonical = tmp_path / "lists.jsonl"
    canonical.write_text('{"id": "a", "hyps": [{"text": "one", "scores": {"score": -1.0}}]}\n', encoding="utf-8")
    register(replace(toy, detect=detect_toy))
    assert rescorer.detect_format(path) == "toy" and rescorer.detect_format(canonical) == "jsonl"
    nbest = rescorer.read_nbest(path)
    assert nbest.fmt == "toy" and [[h.scores["toy"] for h in u.hyps] for u in nbest] == [[-1.5, -2.0], [-0.25]]
    with pytest.raises(rescorer.NBestFormatError, match=re.escape(f"(known: toy, {', '.join(FORMATS)})")):
        rescorer.detect_format(unknown)  # a new format is asked first


def test_a_registered_format_without_detect_is_never_picked(toy, lists):
    path, unknown = lists
    assert toy.detect is None and rescorer.detect_format(path) == "jsonl"  # the shipped format that claims it
    with pytest.raises(rescorer.NBestFormatError, match=re.escape(f"(known: {', '.join(FORMATS)})")):
        rescorer.detect_format(unknown)


def test_an_unknown_format_is_refused_with_the_known_ones(tmp_path):
    with pytest.raises(rescorer.NBestFormatError, match="unknown format .*espnet2"):
        rescorer.read_nbest(tmp_path, fmt="nosuch")
