"""Property tests: read → write → read is identical for every format, and writing keeps texts and scores."""
from __future__ import annotations

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
