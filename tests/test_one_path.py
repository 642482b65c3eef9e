"""Every apply goes one way: for the same tuned rescorer, a list gives the same bytes however it is given — a shard of
``inputs``, a set named by its file (the ``data.sets`` spelling), a list in memory through the Python API, the test
set of the tuning run itself — and whatever the size of the pieces it is read and scored in; a malformed list is
refused by each with the same one-line error."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

import rescorer
from rescorer import FORMATS, read_nbest, write_nbest
from rescorer.io import natural_base
from rescorer.pipeline import RESCORE_COLUMN as RESCORE

from .test_roundtrip import COLUMNS, nbests

FORMATS_WRITTEN = [fmt for fmt in FORMATS if fmt != "nemo"]  # NeMo beams are grouped by a manifest given beside
BASE = {"kaldi": "am", "jsonl": "am"}  # formats whose generated lists hold none of the columns they rank by


def tree(path: Path) -> dict[str, bytes]:
    """Every file under ``path`` (or ``path`` itself) by its relative name, with its bytes."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return {str(p.relative_to(path)) if p != path else p.name: p.read_bytes() for p in files}


def applied_every_way(listed: Path, dev: rescorer.NBest, fmt: str, tmp: Path) -> list[dict[str, bytes]]:
    """The list at ``listed`` re-ranked with the rescorer tuned on ``dev``: as the tuning run's own test set, as a
    shard (pieces of 1, 7 and 10,000 utterances), as a set named by its file, and read into memory first."""
    base = BASE.get(fmt) or natural_base(dev)
    tuned_column = next((c for c in COLUMNS[fmt] if c != base), "words")
    run = tmp / "rescore"
    rescorer.rescore(sets={"dev": dev, "test": str(listed)}, base=base, columns={tuned_column: {}}, out_dir=run,
                     bootstrap=1, retune=None)
    tuned = run / "tuned.yaml"
    native = next(p for p in (run / "test").iterdir() if p.name not in ("1best.txt", "text", "generate-1best.txt"))
    found = [tree(native)]
    for chunk in (1, 7, 10_000):
        out = tmp / f"shards{chunk}"
        rescorer.apply(None, tuned, inputs=[listed], out_dir=out, chunk=chunk, bootstrap=1)
        found.append(tree(out / "shards" / listed.name))
    for name, spelled in (("named", {"nbest": str(listed)}), ("memory", read_nbest(listed, fmt))):
        rescorer.apply({"test": spelled}, tuned, out_dir=tmp / name, bootstrap=1)
        found.append(tree(tmp / name / "test" / native.name))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("fmt", FORMATS_WRITTEN)
def test_every_way_of_applying_writes_the_same_bytes(fmt, tmp_path_factory):
    @settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(nbests(fmt), nbests(fmt))
    def check(dev, test):
        if not any(u.ref is not None for u in dev):
            dev = dev.with_utterances([rescorer.Utterance(u.id, u.hyps, "a b") for u in dev])
        tmp = tmp_path_factory.mktemp(fmt)
        listed = tmp / f"test.{fmt}"
        write_nbest(test, listed, fmt)
        found = applied_every_way(listed, dev, fmt, tmp)
        assert all(ways == found[0] for ways in found[1:]), [sorted(ways) for ways in found]

    check()


def test_a_malformed_list_is_refused_alike_by_every_way(tmp_path):
    good = '{"id": "u%d", "ref": "a b", "hyps": [{"text": "a b", "scores": {"am": -1.0, "lm": -2.0}}]}\n'
    listed = tmp_path / "bad.jsonl"
    listed.write_text(good % 1 + good % 2 + '{"id": "u3", "hyps": [{"text": "c", "scores": {"am": "abc"}}]}\n')
    dev = tmp_path / "dev.jsonl"
    dev.write_text(good % 1 + good % 2)
    rescorer.rescore(sets={"dev": str(dev)}, base="am", columns={"lm": {}}, out_dir=tmp_path / "run", bootstrap=1,
                     retune=None)
    tuned = tmp_path / "run" / "tuned.yaml"
    ways = {"rescore": lambda: rescorer.rescore(sets={"dev": str(dev), "test": str(listed)}, base="am",
                                                columns={"lm": {}}, out_dir=tmp_path / "again", retune=None),
            "shard": lambda: rescorer.apply(None, tuned, inputs=[listed], out_dir=tmp_path / "shards"),
            "named": lambda: rescorer.apply({"test": {"nbest": str(listed)}}, tuned, out_dir=tmp_path / "named"),
            "memory": lambda: rescorer.apply({"test": read_nbest(listed)}, tuned, out_dir=tmp_path / "memory")}
    messages = set()
    for name, way in ways.items():
        with pytest.raises(rescorer.NBestFormatError) as found:
            way()
        messages.add(str(found.value))
    assert messages == {f"{listed}:3: am is not a number: 'abc'"}
    assert not any((tmp_path / name).exists() for name in ("again", "named", "memory"))
    assert not (tmp_path / "shards" / "shards" / "bad.jsonl").exists()
    shutil.rmtree(tmp_path / "run")


def test_every_and_top_take_the_same_subset_of_a_shard_as_of_a_set(tmp_path):
    lines = [f'{{"id": "u{k}", "ref": "w{k} b", "hyps": [{{"text": "w{k} a", "scores": {{"am": -1.0, "lm": {-k % 3}.0}}}}, '
             f'{{"text": "w{k} b", "scores": {{"am": -1.5, "lm": -0.5}}}}, '
             f'{{"text": "w{k} c", "scores": {{"am": -2.0, "lm": 0.0}}}}]}}\n' for k in range(10)]
    listed = tmp_path / "list.jsonl"
    listed.write_text("".join(lines))
    rescorer.rescore(sets={"dev": str(listed)}, base="am", columns={"lm": {}}, out_dir=tmp_path / "run", bootstrap=1,
                     retune=None)
    tuned = tmp_path / "run" / "tuned.yaml"
    rescorer.apply(None, tuned, inputs=[listed], out_dir=tmp_path / "shards", every=3, top=2)
    rescorer.apply({"test": {"nbest": str(listed), "every": 3, "top": 2}}, tuned, out_dir=tmp_path / "named")
    streamed = (tmp_path / "shards" / "shards" / "list.jsonl").read_bytes()
    assert streamed == (tmp_path / "named" / "test" / "list.jsonl").read_bytes()
    kept = read_nbest(tmp_path / "shards" / "shards" / "list.jsonl")
    assert [u.id for u in kept] == ["u0", "u3", "u6", "u9"] and kept.depth == 2  # counted by hand
    with pytest.raises(rescorer.ConfigError, match="another every or top"):  # another subset is another job
        rescorer.apply(None, tuned, inputs=[listed], out_dir=tmp_path / "shards", every=3, top=1)
    with pytest.raises(rescorer.ConfigError, match="top must be"):
        rescorer.apply(None, tuned, inputs=[listed], out_dir=tmp_path / "other", top=0)
    with pytest.raises(rescorer.ConfigError, match="a set's own subset is given with the set"):
        rescorer.apply({"test": str(listed)}, tuned, out_dir=tmp_path / "other", every=2)


def test_every_way_of_applying_re_ranks_with_the_one_rerank_function(tmp_path, monkeypatch):
    """Each way's outputs come from :func:`rescorer.pipeline.rerank.rerank`: replaced by one that marks every total,
    every way writes the mark (a way that sorted hypotheses by itself would not)."""
    import importlib

    module, stream = (importlib.import_module(f"rescorer.pipeline.{name}") for name in ("rerank", "stream"))
    one = module.rerank

    def marked(nbest, features, weights):
        new, ranks = one(nbest, features, weights)
        return new.with_utterances([u.with_hyps([h.with_score(RESCORE, 42.0) for h in u.hyps]) for u in new]), ranks

    monkeypatch.setattr(module, "rerank", marked)
    monkeypatch.setattr(stream, "rerank", marked)
    good = '{"id": "u%d", "ref": "a b", "hyps": [{"text": "a b", "scores": {"am": -1.0, "lm": -2.0}}]}\n'
    listed = tmp_path / "list.jsonl"
    listed.write_text("".join(good % k for k in range(3)))
    run = rescorer.rescore(sets={"dev": str(listed), "test": str(listed)}, base="am", columns={"lm": {}},
                           out_dir=tmp_path / "run", bootstrap=1, retune=None)
    tuned = tmp_path / "run" / "tuned.yaml"
    rescorer.apply(None, tuned, inputs=[listed], out_dir=tmp_path / "shards")
    rescorer.apply({"test": {"nbest": str(listed)}}, tuned, out_dir=tmp_path / "named")
    memory = rescorer.apply({"test": read_nbest(listed)}, tuned, out_dir=tmp_path / "memory")
    written = [tmp_path / "run" / "test.jsonl", tmp_path / "shards" / "shards" / "list.jsonl",
               tmp_path / "named" / "test.jsonl", tmp_path / "memory" / "test.jsonl"]
    lists = [read_nbest(path) for path in written] + [run.nbests["test"], memory.nbests["test"]]
    assert all(h.scores[RESCORE] == 42.0 for nbest in lists for u in nbest for h in u.hyps)
