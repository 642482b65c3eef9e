"""A plain canonical JSONL shard re-ranked line by line gives the bytes the general path gives (the shard read whole,
re-ranked and written back), with input columns, a word bonus, length penalties and an LM; a shard that is not plain
is left to the general path with nothing written, and an apply over it ends as that path ends."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import rescorer
from rescorer.combine import Column
from rescorer.errors import NBestFormatError
from rescorer.io import read_nbest, with_rank, write_nbest
from rescorer.metrics import make_metric
from rescorer.pipeline import linewise as linewise_module
from rescorer.pipeline.linewise import NotPlain, rerank_lines
from rescorer.pipeline.shards import rerank_shard
from rescorer.pipeline.tuned import Tuned

from .conftest import DEMO

WER = make_metric("wer")


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> Path:
    """The demo's test_clean as a plain JSONL shard (every ESPnet column, references) with a few hostile texts."""
    nbest = read_nbest(DEMO / "test_clean", refs=DEMO / "test_clean" / "ref.trn")
    utterances = [u.with_hyps(u.hyps[:7]) for u in nbest][:60]
    odd = ['say "hi": ratio 3:1', "<b>bold</b> \u2028 line\u2029 \x85 end", "ÜBER façade 東京", ""]
    first = utterances[0]
    utterances[0] = first.with_hyps([h if k >= len(odd) else type(h)(odd[k], h.scores) for k, h in
                                     enumerate(first.hyps)])
    path = tmp_path_factory.mktemp("plain") / "shard.jsonl"
    write_nbest(nbest.with_utterances(utterances), path, "jsonl")
    return path


def tuned_with(columns: list[Column], weights: dict[str, float], scorers: dict | None = None) -> Tuned:
    return Tuned.of(Column("score"), columns, weights, WER, scorers or {})


def general(source: Path, tuned: Tuned, scorers: dict, out: Path, chunk: int = 25) -> tuple[bytes, object]:
    """The shard read whole, re-ranked and written back."""
    weights = np.array([tuned.weights[c.name] for c in tuned.columns])
    new, result = rerank_shard(with_rank(read_nbest(source)), tuned, scorers, WER, weights, chunk)
    write_nbest(new, out)
    return out.read_bytes(), result


def linewise(source: Path, tuned: Tuned, scorers: dict, out: Path, chunk: int = 25) -> tuple[bytes, object]:
    weights = np.array([tuned.weights[c.name] for c in tuned.columns])
    tally = rerank_lines(source, out, tuned, scorers, WER, weights, chunk, 20)
    return out.read_bytes(), tally


CASES = {
    "input columns": ([Column("ctc"), Column("lm")], {"ctc": 0.7, "lm": -0.4}),
    "word bonus and penalties": ([Column("ctc", penalty="gnmt", alpha=0.8), Column("lm", penalty="tokens"),
                                  Column("words")], {"ctc": 0.5, "lm": 0.9, "words": 1.5}),
}


@pytest.mark.parametrize("case", CASES)
def test_a_plain_shard_is_rewritten_as_the_general_path_writes_it(plain, case, tmp_path):
    tuned = tuned_with(*CASES[case])
    expected, result = general(plain, tuned, {}, tmp_path / "general.jsonl")
    found, tally = linewise(plain, tuned, {}, tmp_path / "linewise.jsonl")
    assert found == expected
    assert (tally.utterances, tally.hypotheses, tally.depth, tally.changed) == (
        result.entry.utterances, result.entry.hypotheses, result.depth, result.entry.changed_1best)
    assert tally.changes == result.changes and tally.changed > 0  # the weights change some 1-bests


def test_a_plain_shard_scored_by_an_lm_is_rewritten_as_the_general_path_writes_it(plain, tiny_causal, tmp_path):
    scorer = rescorer.load_scorer("ll", str(tiny_causal), progress=False)
    tuned = tuned_with([Column("ctc"), Column("ll", penalty="tokens")], {"ctc": 0.3, "ll": 2.0}, {"ll": scorer})
    expected, result = general(plain, tuned, {"ll": scorer}, tmp_path / "general.jsonl")
    found, tally = linewise(plain, tuned, {"ll": scorer}, tmp_path / "linewise.jsonl")  # the same batches
    assert found == expected and tally.changed == result.entry.changed_1best > 0
    written = [json.loads(line) for line in found.decode().splitlines()]
    assert list(written[1]["hyps"][0]["scores"])[-2:] == ["ll", "rescore"]  # the LM column, then the total


def hypothesis(text: str = "a b", **scores: object) -> dict:
    return {"text": text, "scores": scores or {"score": -1.5}}


EXTRAS = ['{"nbest": {"fmt": "fairseq", "meta": {"log_base": "2"}}}',
          {"id": "u", "ref": "a b", "hyps": [{**hypothesis("a"), "raw": {"score": "-1.50", "rescore": "-9"}},
                                             {**hypothesis("a b", score=-1.0), "tokens": "▁a ▁b"}]},
          {"id": "v", "hyps": [{**hypothesis(score=-3.0), "raw": {"rescore": "x"}, "meta": {"n": "1"}},
                               hypothesis("b", score=-2.0, rescore=-7.0)], "meta": {"speaker": "x"}}]


def test_a_header_line_raw_values_tokens_and_meta_are_rewritten_as_the_general_path_writes_them(tmp_path):
    source = tmp_path / "shard.jsonl"
    source.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in EXTRAS))
    tuned = tuned_with([Column("words")], {"words": 2.0})
    expected, _ = general(source, tuned, {}, tmp_path / "general.jsonl")
    found, tally = linewise(source, tuned, {}, tmp_path / "linewise.jsonl")
    assert found == expected and tally.changed == 1  # u: "a b" (two words) now first
    assert '"rescore": "-9"' not in found.decode() and found.decode().startswith('{"nbest": {"fmt": "fairseq"')


NOT_PLAIN = {
    "an empty raw object": [{"id": "u", "hyps": [{**hypothesis(), "raw": {}}]}],
    "a raw number": [{"id": "u", "hyps": [{**hypothesis(), "raw": {"score": -1.5}}]}],
    "tokens null": [{"id": "u", "hyps": [{**hypothesis(), "tokens": None}]}],
    "meta before scores": [{"id": "u", "hyps": [{"text": "a", "meta": {"n": "1"}, "scores": {"score": -1.0}}]}],
    "a header after an utterance": [{"id": "u", "hyps": [hypothesis()]}, '{"nbest": {"fmt": "jsonl"}}'],
    "a key twice in the header": ['{"nbest": {"fmt": "jsonl", "fmt": "moses"}}', {"id": "u", "hyps": [hypothesis()]}],
    "an integer score": [{"id": "u", "hyps": [hypothesis(score=-2)]}],
    "a -inf score": [{"id": "u", "hyps": [hypothesis(score="-inf")]}],
    "a NaN score": ['{"id": "u", "hyps": [{"text": "a", "scores": {"score": NaN}}]}'],
    "a boolean score": [{"id": "u", "hyps": [hypothesis(score=True)]}],
    "a key twice in the scores": ['{"id": "u", "hyps": [{"text": "a", "scores": {"score": -1.0, "score": -2.0}}]}'],
    "a key twice, spaced": ['{"id": "u", "hyps": [{"text": "a", "scores": {"score" : -1.0, "score": -2.0}}]}'],
    "an id twice": [{"id": "u", "hyps": [hypothesis()]}, {"id": "u", "hyps": [hypothesis()]}],
    "a number as id": [{"id": 7, "hyps": [hypothesis()]}],
    "a missing column": [{"id": "u", "hyps": [hypothesis(other=-1.0)]}],
    "the scores first": [{"id": "u", "hyps": [{"scores": {"score": -1.0}, "text": "a"}]}],
    "no scores at all": [{"id": "u", "hyps": [{"text": "a", "scores": {}}]}],
    "invalid JSON": ['{"id": "u", "hyps": [}'],
    "blank lines only": ["", "   "],
    "two utterances on a line": ['{"id": "u", "hyps": []} {"id": "v", "hyps": []}'],
    "an utterance over two lines": ['{"id": "u", "hyps": []}, {"id": "v",', '"hyps": []}'],
    "a space before an utterance": [' {"id": "u", "hyps": []}'],
}


@pytest.mark.parametrize("case", NOT_PLAIN)
def test_a_shard_that_is_not_plain_is_left_to_the_general_path_with_nothing_written(case, tmp_path):
    source = tmp_path / "shard.jsonl"
    source.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in NOT_PLAIN[case]))
    with pytest.raises(NotPlain):
        linewise(source, tuned_with([], {}), {}, tmp_path / "out" / "shard.jsonl")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


LAYOUTS = {
    "Windows line ends": lambda data: data.replace(b"\n", b"\r\n"),
    "a byte-order mark": lambda data: b"\xef\xbb\xbf" + data,
    "no newline at the end": lambda data: data.removesuffix(b"\n"),
}


@pytest.mark.parametrize("block", [64, 4096])  # bytes read at a time: less than a line, and a few lines
@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_shard_read_in_blocks_is_rewritten_as_the_general_path_writes_it(plain, layout, block, tmp_path,
                                                                          monkeypatch):
    monkeypatch.setattr(linewise_module, "BLOCK", block)
    source = tmp_path / "shard.jsonl"
    source.write_bytes(LAYOUTS[layout](plain.read_bytes()))
    tuned = tuned_with(*CASES["input columns"])
    expected, _ = general(source, tuned, {}, tmp_path / "general.jsonl")
    found, tally = linewise(source, tuned, {}, tmp_path / "linewise.jsonl")
    assert found == expected and tally.utterances == 60


def test_a_colon_or_quote_in_a_text_is_still_plain(tmp_path):
    source = tmp_path / "shard.jsonl"
    rows = [{"id": "u:1", "ref": 'he said "no": fine', "hyps": [hypothesis('he said "no": fine'),
                                                                 hypothesis("time 10:30", score=-0.5)]}]
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    found, tally = linewise(source, tuned_with([], {}), {}, tmp_path / "out.jsonl")
    assert tally.changed == 1 and json.loads(found)["hyps"][0]["text"] == "time 10:30"


@pytest.mark.parametrize("case", ["an empty raw object", "tokens null", "an integer score", "a -inf score",
                                  "meta before scores"])
def test_an_apply_over_a_shard_that_is_not_plain_writes_what_the_general_path_writes(case, tmp_path):
    source = tmp_path / "in" / "shard.jsonl"
    source.parent.mkdir()
    rows = NOT_PLAIN[case] + [{"id": "v", "hyps": [hypothesis("x y"), hypothesis("x", score=-0.5)]}]
    source.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))
    tuned = tuned_with([Column("words")], {"words": 2.0})
    expected, _ = general(source, tuned, {}, tmp_path / "general.jsonl")
    rescorer.apply(None, tuned, inputs=source, out_dir=tmp_path / "out")
    assert (tmp_path / "out" / "shards" / "shard.jsonl").read_bytes() == expected


def test_an_apply_over_plain_shards_writes_what_the_general_path_writes(plain, tmp_path):
    tuned = tuned_with(*CASES["word bonus and penalties"])
    expected, _ = general(plain, tuned, {}, tmp_path / "general.jsonl")
    report = rescorer.apply(None, tuned, inputs=[plain], out_dir=tmp_path / "out").report
    assert (tmp_path / "out" / "shards" / "shard.jsonl").read_bytes() == expected
    assert report.sets["shard.jsonl"].utterances == 60


@pytest.mark.parametrize("case", ["two utterances on a line", "an utterance over two lines"])
def test_an_apply_over_a_line_that_is_not_one_utterance_refuses_it_naming_the_line(case, tmp_path):
    source = tmp_path / "shard.jsonl"
    source.write_text("".join(row + "\n" for row in NOT_PLAIN[case]))
    with pytest.raises(NBestFormatError, match=r"shard\.jsonl:1: invalid JSON \(Extra data\)"):
        rescorer.apply(None, tuned_with([], {}), inputs=source, out_dir=tmp_path / "out")
    assert not (tmp_path / "out" / "shards").exists() or not any((tmp_path / "out" / "shards").iterdir())
