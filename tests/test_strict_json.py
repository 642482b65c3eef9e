"""Every JSON value the package writes is strict JSON: through the one codec (msgspec, which has no spelling for NaN
or Infinity), or through ``json.dumps`` told to refuse them. The files the suite writes are checked too
(``tests/conftest.py``)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import rescorer
from rescorer.types import Hypothesis, NBest, Utterance

from .conftest import strict_json

PACKAGE = Path(rescorer.__file__).parent


def test_every_json_dumps_of_the_package_refuses_nan_and_infinity():
    loose = [f"{path.relative_to(PACKAGE)}:{node.lineno}" for path in sorted(PACKAGE.rglob("*.py"))
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and node.func.attr in ("dump", "dumps") and getattr(node.func.value, "id", None) == "json"
             and not any(k.arg == "allow_nan" and getattr(k.value, "value", True) is False for k in node.keywords)]
    assert not loose, loose


def test_the_strict_check_of_written_files_catches_what_python_json_writes_by_default(tmp_path):
    import json

    with pytest.raises(ValueError, match="not JSON"):
        strict_json(json.dumps({"score": float("-inf")}))
    nbest = NBest((Utterance("u", (Hypothesis("a", {"am": float("-inf"), "lm": float("nan")}),)),))
    rescorer.write_nbest(nbest, tmp_path / "out.jsonl")
    assert strict_json((tmp_path / "out.jsonl").read_text(encoding="utf-8"))["hyps"][0]["scores"] == {
        "am": "-inf", "lm": "nan"}
