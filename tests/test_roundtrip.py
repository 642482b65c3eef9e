"""Property tests: read → write → read is identical for every format, and writing keeps texts and scores."""
from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rescorer import FORMATS, Hypothesis, NBest, Utterance, read_nbest, write_nbest

# Columns each format carries, under the names its reader gives them.
COLUMNS = {
    "espnet2": ["score", "decoder", "ctc", "lm"],
    "espnet1": ["score"],
    "fairseq": ["score"],
    "moses": ["d_0", "d_1", "lm", "w", "total"],
    "marian": ["F0", "F1", "total"],
    "sockeye": ["score"],
    "nemo": ["score"],
    "kaldi": ["am", "graph", "lm"],
    "mlm-scoring": ["score"],
    "jsonl": ["am", "lm_1", "pll"],
    "hyporadise": ["am_score"],
}
KEEPS_REFS = {"espnet1", "fairseq", "mlm-scoring", "jsonl", "nemo", "hyporadise"}
META = {"moses": {"labels": "equals"}, "marian": {"labels": "equals"}, "fairseq": {"log_base": "2"}}

words = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'éß", min_size=1, max_size=8)
texts = st.lists(words, max_size=8).map(" ".join)
values = st.floats(min_value=-1e4, max_value=1e4, allow_nan=False, allow_infinity=False)


@st.composite
def nbests(draw, fmt: str) -> NBest:
    n_utts = draw(st.integers(1, 4))
    beam = draw(st.integers(1, 4))
    utterances = []
    for i in range(n_utts):
        n_hyps = beam if fmt == "nemo" else draw(st.integers(1, 4))
        hyps = tuple(Hypothesis(draw(texts), {c: draw(values) for c in COLUMNS[fmt]}) for _ in range(n_hyps))
        ref = draw(texts) if fmt in KEEPS_REFS else None
        utterances.append(Utterance(str(i), hyps, ref))
    return NBest(tuple(utterances), fmt=fmt, meta=META.get(fmt, {}))


def write_read(nbest: NBest, path, fmt: str) -> NBest:
    name = path / f"{fmt}.{len(list(path.iterdir()))}"
    if fmt == "nemo":
        manifest = path / f"manifest.{len(list(path.iterdir()))}.json"
        write_nbest(nbest, name, fmt, manifest=manifest)
        return read_nbest(name, fmt, refs=manifest)
    write_nbest(nbest, name, fmt)
    return read_nbest(name, fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip(fmt, tmp_path_factory):
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(nbests(fmt))
    def check(original):
        tmp = tmp_path_factory.mktemp(fmt)
        first = write_read(original, tmp, fmt)
        second = write_read(first, tmp, fmt)
        assert first == second
        assert first.fmt == fmt
        assert [u.id for u in first] == [u.id for u in original]
        for got, want in zip(first, original):
            if fmt in KEEPS_REFS:
                assert got.ref == want.ref
            assert [h.text for h in got.hyps] == [h.text for h in want.hyps]
            for g, w in zip(got.hyps, want.hyps):
                assert g.scores.keys() == w.scores.keys()
                for column, value in w.scores.items():
                    assert math.isclose(g.scores[column], value, rel_tol=1e-12, abs_tol=1e-9), column

    check()


@pytest.mark.parametrize("breaker", ["\u2028", "\u2029", "\x85"])
def test_text_holding_a_unicode_line_break_is_written_and_read_back_as_one_record(breaker, tmp_path):
    """JSON allows U+2028, U+2029 and U+0085 raw, but many tools split lines on them: they are written escaped, and
    read back (whatever the writer) as part of the text."""
    text = f"one{breaker}two"
    nbest = NBest((Utterance("u1", (Hypothesis(text, {"am": -1.0}), Hypothesis("three", {"am": -2.0})), ref=text),
                   Utterance("u2", (Hypothesis("four", {"am": -1.0}),), ref="four")))
    path = tmp_path / "out.jsonl"
    write_nbest(nbest, path, "jsonl")
    written = path.read_text(encoding="utf-8")
    assert breaker not in written and len(written.split("\n")) == 3 and len(written.splitlines()) == 2
    back = read_nbest(path)  # fmt=auto sniffs the first record
    assert back.texts() == nbest.texts() and back.refs() == nbest.refs()
    raw = tmp_path / "raw.jsonl"  # another tool's output, the character left raw in the first record
    raw.write_text(written.replace(breaker.encode("unicode_escape").decode().replace("\\x85", "\\u0085"), breaker),
                   encoding="utf-8")
    assert breaker in raw.read_text(encoding="utf-8") and read_nbest(raw).texts() == nbest.texts()


VALUES = [{"id": "u", "ref": None, "hyps": [{"text": 'ÜBER "façade"\\ 東京\t\x00\x7f', "scores": {"am": -0.1}}]},
          [1.0, -0.0, 1e-7, 1e16, 1.7e308, 5e-324, 10**30, -7, True, None], "plain text", 3.25, {"": {"nested": [[], {}]}}]


def strict_json(text: str) -> object:
    """``text`` parsed as strict JSON: NaN and Infinity refused."""
    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_a_json_line_is_strict_json_of_the_value_on_one_line_with_the_line_breakers_escaped(value):
    from rescorer.io.codec import json_line

    line = json_line([value, "a\u2028b\x85\u2029"])
    assert strict_json(line) == [value, "a\u2028b\x85\u2029"] and len(line.splitlines()) == 1
    assert "\u2028" not in line and "\x85" not in line and "\\u2028" in line and "\\u0085" in line


def test_scores_json_cannot_hold_are_written_as_text_and_read_back(tmp_path):
    nbest = NBest((Utterance("u1", (Hypothesis("a", {"am": -1.5, "lm": float("-inf")}), Hypothesis("b", {"am": 2.0}))),))
    write_nbest(nbest, tmp_path / "out.jsonl")
    lines = (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()
    assert strict_json(lines[0])["hyps"][0]["scores"] == {"am": -1.5, "lm": "-inf"}
    assert read_nbest(tmp_path / "out.jsonl").utterances == nbest.utterances


def test_hypotheses_without_raw_values_or_meta_share_one_empty_mapping_that_cannot_change(tmp_path):
    import pickle

    path = tmp_path / "list.jsonl"
    path.write_text('{"id": "a", "hyps": [{"text": "x", "scores": {"score": -1.5}}, {"text": "y"}]}\n')
    first, second = read_nbest(path).utterances[0].hyps
    assert first.raw is second.raw is second.scores is first.meta is Hypothesis("z").meta
    assert first.scores == {"score": -1.5} and dict(second.raw) == {}
    with pytest.raises(TypeError, match="shared"):
        first.raw["score"] = "-1.5"  # type: ignore[index]
    back = pickle.loads(pickle.dumps(first))
    assert back == first and back.raw is first.raw
    assert not hasattr(first, "__dict__")  # slots: a list of millions of hypotheses carries no dict per object
