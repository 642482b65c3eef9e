"""The score store: persistent, keyed by signature, and a killed run resumes without recomputing finished rows."""
from __future__ import annotations

import json
import signal
import subprocess
import sys

import numpy as np
import pytest

from rescorer import load_scorer, read_nbest
from rescorer.store import ScoreStore

from .conftest import DEMO


def test_put_get_and_signatures_are_separate(tmp_path):
    with ScoreStore(tmp_path / "s.sqlite") as store:
        store.put("sig-a", {"a cat": (-1.5, [-1.0, -0.5]), "": (0.0, [])})
        store.put("sig-b", {"a cat": (-9.0, [-9.0])})
        assert store.get("sig-a", ["a cat", "a dog", ""]) == {"a cat": (-1.5, [-1.0, -0.5]), "": (0.0, [])}
        assert store.get("sig-b", ["a cat"]) == {"a cat": (-9.0, [-9.0])}
        assert store.count() == 3 and sorted(store.signatures()) == ["sig-a", "sig-b"]


def test_readers_see_committed_rows_while_a_writer_holds_a_transaction(tmp_path):
    path = tmp_path / "s.sqlite"
    writer = ScoreStore(path)
    writer.put("sig", {"one": (-1.0, [-1.0])})
    writer.db.execute("BEGIN IMMEDIATE")
    writer.db.execute("INSERT INTO scores VALUES ('sig', 'two', -2.0, '[-2.0]')")
    reader = ScoreStore(path)
    assert reader.get("sig", ["one", "two"]) == {"one": (-1.0, [-1.0])}
    writer.db.execute("COMMIT")
    assert reader.get("sig", ["one", "two"]) == {"one": (-1.0, [-1.0]), "two": (-2.0, [-2.0])}


def test_second_run_reads_everything_from_the_store(tiny_models, tmp_path):
    texts = ["A CAT SAT", "A DOG", "A CAT SAT"]
    first = load_scorer("pll", str(tiny_models["bert"]), store=tmp_path / "s.sqlite", progress=False)
    scores = first.score(texts)
    again = load_scorer("pll", str(tiny_models["bert"]), store=tmp_path / "s.sqlite", progress=False).compute(texts)
    assert again.totals == scores
    assert again.stats.cached == 2 and again.stats.rows_computed == 0
    other = load_scorer("pll", str(tiny_models["bert"]), variant="original", store=tmp_path / "s.sqlite", progress=False)
    assert other.compute(texts).stats.cached == 0  # another variant is another signature


SCRIPT = """
import json, os, signal, sys
from rescorer import load_scorer
from rescorer.store import ScoreStore

texts = json.load(open(sys.argv[2]))
put, stored = ScoreStore.put, [0]


def put_then_die(self, signature, scores):  # kill -9 right after the store holds 600 texts: no race
    put(self, signature, scores)
    stored[0] += len(scores)
    if stored[0] >= 600:
        os.kill(os.getpid(), signal.SIGKILL)


ScoreStore.put = put_then_die
scorer = load_scorer("pll", sys.argv[1], store=sys.argv[3], budget=512, progress=False)
scorer.engine.flush_seconds = 0.0  # store every finished sentence at once
scorer.score(texts)
"""


@pytest.mark.slow
def test_killed_run_resumes_from_the_store(tiny_models, tmp_path):
    texts = [h.text for name in ("dev_other", "test_clean") for u in read_nbest(DEMO / name) for h in u.hyps]
    texts = list(dict.fromkeys(texts))[:2000]
    assert len(texts) == 2000
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    store_path = tmp_path / "store.sqlite"
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tiny_models["bert"]), str(tmp_path / "texts.json"),
                           str(store_path)], timeout=600)
    assert proc.returncode == -signal.SIGKILL, "the run was not killed"

    scorer = load_scorer("pll", str(tiny_models["bert"]), store=store_path, progress=False)
    with ScoreStore(store_path) as store:
        kept = store.get(scorer.signature, texts)
    assert 600 <= len(kept) < len(texts)
    missing_rows = scorer.adapter.pool([scorer.adapter.prepare(t) for t in texts if t not in kept]).rows
    result = scorer.compute(texts)
    resumed = result.totals
    assert result.stats.cached == len(kept)
    assert result.stats.rows_computed == missing_rows

    sample = np.random.default_rng(0).choice(len(texts), 300, replace=False)
    fresh = load_scorer("pll", str(tiny_models["bert"]), progress=False).score([texts[i] for i in sample])
    np.testing.assert_allclose([resumed[i] for i in sample], fresh, atol=1e-5)
    assert all(resumed[i] == pytest.approx(kept[texts[i]][0], abs=0) for i in range(len(texts)) if texts[i] in kept)


@pytest.mark.parametrize("total, tokens", [
    ("NaN", "[-1.0, -2.0]"), (float("inf"), "[]"), (float("-inf"), "[-1.0]"), ("abc", "[-1.0]"),
    (b"\x00blob", "[-1.0]"), (-3.0, "not json"), (-3.0, "null"), (-3.0, '{"a": 1}'), (-3.0, '[-1.0, "x"]'),
    (-3.0, "[NaN]"), (-3.0, "[1e999]"), (-3.0, b"\x00"),
], ids=["nan-total", "inf-total", "minus-inf-with-tokens", "text-total", "blob-total", "tokens-not-json",
        "tokens-null", "tokens-object", "token-text", "token-nan", "token-overflow", "tokens-blob"])
def test_a_row_the_tool_never_wrote_is_computed_again_and_replaced(total, tokens, tiny_causal, tmp_path):
    """A store is input too: a row no run writes (it passes SQLite's own check) is never trusted; the text is
    scored again, the row replaced, and the scores equal a run without a store."""
    import sqlite3

    texts = ["the cat sat", "a dog ran", ""]
    fresh = load_scorer("ll", str(tiny_causal), store=None, progress=False).compute(texts)
    path = tmp_path / "store.sqlite"
    scorer = load_scorer("ll", str(tiny_causal), store=str(path), progress=False)
    scorer.compute(texts)
    scorer.engine.store.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE scores SET total = ?, tokens = ? WHERE text = ?", (total, tokens, "the cat sat"))
    with ScoreStore(path) as store:
        assert set(store.get(scorer.signature, texts)) == {"a dog ran", ""}
    again = load_scorer("ll", str(tiny_causal), store=str(path), progress=False).compute(texts)
    assert again.stats.cached == 2 and again.stats.rows_computed == 1  # that text alone, in a batch of its own
    assert np.allclose(again.totals, fresh.totals, atol=1e-4)
    assert all(np.allclose(a, b, atol=1e-4) for a, b in zip(again.tokens, fresh.tokens))
    with ScoreStore(path) as store:
        assert store.get(scorer.signature, texts)["the cat sat"] == (again.totals[0], again.tokens[0])


@pytest.mark.parametrize("kind", ["a pipe", "a device", "a directory"])
def test_a_store_path_that_is_not_a_file_is_refused_before_it_is_opened(kind, tmp_path):
    import os

    from rescorer.errors import StoreError

    path = {"a pipe": tmp_path / "fifo", "a device": "/dev/zero", "a directory": tmp_path}[kind]
    if kind == "a pipe":
        os.mkfifo(path)
    with pytest.raises(StoreError, match=f"not a score store but {kind}: point engine.store at a file"):
        ScoreStore(path)


def test_a_read_only_store_answers_what_it_holds_and_says_what_it_cannot_take(tiny_causal, tmp_path):
    """A store on read-only media (mounted read-only here, in a mount namespace of its own) serves the scores it
    holds; a run that needs new ones is one line saying the store cannot take them."""
    import shutil

    if shutil.which("unshare") is None or subprocess.run(
            ["unshare", "-m", "sh", "-c", f"mount --bind {tmp_path} {tmp_path} && mount -o remount,bind,ro {tmp_path}"],
            capture_output=True).returncode != 0:
        pytest.skip("a read-only bind mount needs unshare and mount with root rights (not available here)")
    texts = ["the cat sat", "a dog ran"]
    store = tmp_path / "ro" / "store.sqlite"
    first = load_scorer("ll", str(tiny_causal), store=str(store), progress=False).compute(texts)
    code = f"""
import rescorer
scorer = rescorer.load_scorer("ll", {str(tiny_causal)!r}, store={str(store)!r}, progress=False)
again = scorer.compute({texts!r})
print(again.stats.cached, again.totals == {first.totals!r})
try:
    scorer.compute(["a new text"])
except rescorer.RescorerError as err:
    print(err)
"""
    mount = f"mount --bind {store.parent} {store.parent} && mount -o remount,bind,ro {store.parent}"
    result = subprocess.run(["unshare", "-m", "sh", "-c", f'{mount} && exec "$0" -c "$1"', sys.executable, code],
                            capture_output=True, text=True, timeout=300)
    lines = result.stdout.splitlines()
    assert result.returncode == 0 and lines[0] == "2 True", result.stdout + result.stderr
    assert lines[1] == (f"{store}: the score store is read-only and lacks 1 of the scores this run needs: point "
                        "engine.store at a file that can be written")
