"""Every N-best format read from hand-made fixtures (tests/fixtures/formats/README.md), checked
against hand-counted ids, texts, natural-log scores and raw values, then written back and re-read."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from rescorer.errors import NBestFormatError
from rescorer.io import detect_format, read_nbest, write_nbest

FIX = Path(__file__).parent / "fixtures" / "formats"
LN2 = math.log(2)

ESPNET2 = "espnet2/decode_asr_lm/dev_clean"
ESPNET1 = "espnet1/decode_test_clean_beam10/data.json"
FAIRSEQ = "fairseq/results/generate-test.txt"
FAIRSEQ_09 = "fairseq/generate-test.v0.9.txt"
FAIRSEQ_INTERACTIVE = "fairseq/interactive.out"
MOSES_OLD = "moses/nbest.old-labels.txt"
MOSES = "moses/nbest.txt"
MOSES_SEGMENTATION = "moses/nbest.segmentation.txt"
MARIAN = "marian/nbest.txt"
MARIAN_GLUED = "marian/nbest.glued.txt"
MARIAN_ALIGN = "marian/nbest.align.txt"
SOCKEYE = "sockeye/nbest.jsonl"
SOCKEYE_FACTORED = "sockeye/nbest.factored.jsonl"
NEMO = "nemo/preds_out_size4_alpha0.5_beta1.0.tsv"
NEMO_MANIFEST = "nemo/dev_clean.json"
KALDI = "kaldi/nbest"
MLM = "mlm-scoring/dev-clean.am.json"
MLM_INT = "mlm-scoring/int-scores.json"
JSONL = "jsonl/nbest.jsonl"
HYPORADISE = "hyporadise/test_chime4.json"
HYPORADISE_COMPACT = "hyporadise/compact.json"

LIBRI_0000 = "MISTER QUILTER IS THE APOSTLE OF THE MIDDLE CLASSES AND WE ARE GLAD TO WELCOME HIS GOSPEL"
LIBRI_0001 = "NOR IS MISTER QUILTER'S MANNER LESS INTERESTING THAN HIS MATTER"
LIBRI_UNIVERSE = "A MAN SAID TO THE UNIVERSE SIR I EXIST"


# fixture, detected format, [(utterance id, number of hypotheses)] in reading order
FIXTURES = [
    pytest.param(ESPNET2, "espnet2",
                 [("1272-128104-0000", 3), ("1272-128104-0001", 2), ("1272-141231-0000", 3), ("1272-141231-0016", 3)],
                 id="espnet2"),
    pytest.param(ESPNET1, "espnet1", [("1089-134686-0003", 3), ("1188-133604-0030", 2)], id="espnet1"),
    pytest.param(FAIRSEQ, "fairseq", [("0", 2), ("1", 2), ("2", 2), ("3", 2)], id="fairseq"),
    pytest.param(FAIRSEQ_09, "fairseq", [("0", 2), ("1", 2), ("2", 2)], id="fairseq-0.9"),
    pytest.param(FAIRSEQ_INTERACTIVE, "fairseq", [("0", 2), ("1", 2)], id="fairseq-interactive"),
    pytest.param(MOSES_OLD, "moses", [("0", 3), ("1", 2)], id="moses-old-labels"),
    pytest.param(MOSES, "moses", [("0", 3), ("1", 2)], id="moses"),
    pytest.param(MOSES_SEGMENTATION, "moses", [("0", 3), ("1", 2)], id="moses-segmentation"),
    pytest.param(MARIAN, "marian", [("0", 3), ("1", 3)], id="marian"),
    pytest.param(MARIAN_GLUED, "marian", [("0", 2), ("1", 2)], id="marian-glued"),
    pytest.param(MARIAN_ALIGN, "marian", [("0", 2), ("1", 2)], id="marian-alignment"),
    pytest.param(SOCKEYE, "sockeye", [("1", 2), ("2", 2), ("3", 3)], id="sockeye"),
    pytest.param(SOCKEYE_FACTORED, "sockeye", [("1", 2), ("2", 2)], id="sockeye-factored"),
    pytest.param(NEMO, "nemo", [("1272-128104-0000", 4), ("1272-128104-0001", 4), ("1272-141231-0000", 4)], id="nemo"),
    pytest.param(KALDI, "kaldi", [("1089-134686-0001", 3), ("1089-134691-0000", 2)], id="kaldi"),
    pytest.param(MLM, "mlm-scoring", [("1272-128104-0000", 3), ("1272-128104-0001", 2)], id="mlm-scoring"),
    pytest.param(MLM_INT, "mlm-scoring", [("utt0", 2), ("utt1", 2)], id="mlm-scoring-int-scores"),
    pytest.param(JSONL, "jsonl", [("dev-0001", 3), ("dev-0002", 2)], id="jsonl"),
    pytest.param(HYPORADISE, "hyporadise", [("F01_050C0101_BUS", 3), ("1", 2), ("7", 3)], id="hyporadise"),
    pytest.param(HYPORADISE_COMPACT, "hyporadise", [("u1", 2), ("u2", 1)], id="hyporadise-compact"),
]

# ---------------------------------------------------------------- helpers
def exact(value: float):
    return pytest.approx(value, abs=1e-12)


def read(rel: str, **options):
    """Read a fixture; NeMo gets its manifest (the TSV has no ids)."""
    if rel == NEMO:
        options.setdefault("refs", FIX / NEMO_MANIFEST)
    return read_nbest(FIX / rel, **options)


def texts(utt) -> list[str]:
    return [h.text for h in utt.hyps]


def column(utt, name: str = "score") -> list[float]:
    return [h.scores[name] for h in utt.hyps]


def raw(utt, name: str = "score") -> list[str]:
    return [h.raw[name] for h in utt.hyps]


def formats():
    """(fixture, format) of every fixture."""
    return [pytest.param(*p.values[:2], id=p.id) for p in FIXTURES]


def output_path(tmp_path: Path, rel: str) -> Path:
    """Where to write a copy of fixture ``rel``: a directory for directory formats, else a file with its suffix."""
    return tmp_path / ("out" if (FIX / rel).is_dir() else f"out{Path(rel).suffix}")


def write_and_read(nbest, path: Path, fmt: str):
    """Write ``nbest`` as ``fmt`` and read it back (NeMo travels with a manifest written beside it)."""
    if fmt == "nemo":
        manifest = path.with_name("manifest.json")
        write_nbest(nbest, path, fmt=fmt, manifest=manifest)
        return read_nbest(path, refs=manifest)
    write_nbest(nbest, path, fmt=fmt)
    return read_nbest(path)


# ---------------------------------------------------------------- every fixture
@pytest.mark.parametrize("rel, fmt, expected", FIXTURES)
def test_detect_format_and_layout(rel, fmt, expected):
    """The format is detected, and utterances come in the documented order with every hypothesis."""
    assert detect_format(FIX / rel) == fmt
    nbest = read(rel)
    assert nbest.fmt == fmt
    assert [(u.id, len(u.hyps)) for u in nbest] == expected


@pytest.mark.parametrize("text", ['{"a":\t1.0\n}\n', '{"a": 1}\nH-0\tone\n'], ids=["nemo-like", "fairseq-like"])
def test_a_json_object_is_never_taken_for_a_line_format(text, tmp_path):
    """A first line that opens a JSON object is a JSON format's: no other format's lines are looked for in it."""
    path = tmp_path / "list.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(NBestFormatError, match="unknown N-best format"):
        detect_format(path)


@pytest.mark.parametrize("rel, fmt", formats())
def test_round_trip(rel, fmt, tmp_path):
    """Writing in the format read and reading again gives an equal NBest."""
    nbest = read(rel)
    assert write_and_read(nbest, output_path(tmp_path, rel), nbest.fmt) == nbest


@pytest.mark.parametrize("rel, fmt", formats())
def test_conversion_through_jsonl_keeps_texts_and_scores(rel, fmt, tmp_path):
    """Fixture → canonical JSONL → its own format again keeps every text and natural-log score."""
    original = read(rel)
    via_jsonl = write_and_read(original, tmp_path / "nbest.jsonl", "jsonl")
    assert via_jsonl.fmt == "jsonl"
    back = write_and_read(via_jsonl, output_path(tmp_path, rel), fmt)
    assert [texts(u) for u in back] == [texts(u) for u in original]
    assert [[dict(h.scores) for h in u.hyps] for u in back] == [[dict(h.scores) for h in u.hyps] for u in original]


def test_espnet2_to_jsonl_and_back_is_lossless(tmp_path):
    """ESPnet2 → canonical JSONL → ESPnet2 keeps texts, scores, raw tensor reprs and tokens: the NBest is equal."""
    original = read(ESPNET2)
    via_jsonl = write_and_read(original, tmp_path / "nbest.jsonl", "jsonl")
    assert [column(u) for u in via_jsonl] == [column(u) for u in original]
    back = write_and_read(via_jsonl, tmp_path / "decode", "espnet2")
    assert back.fmt == "espnet2"
    assert [texts(u) for u in back] == [texts(u) for u in original]
    assert back == original


def test_espnet2_decode_dir_has_the_1best_text_asr_sh_scores(tmp_path):
    """A written ESPnet2 list is a decode directory asr.sh's scoring stage takes: a top-level ``text`` (and
    ``score``) of each utterance's first hypothesis, sorted by id; the reader still reads the ranks only."""
    from dataclasses import replace

    original = read(ESPNET2)
    flipped = original.with_utterances([replace(u, hyps=u.hyps[::-1]) for u in reversed(original.utterances)])
    back = write_and_read(flipped, tmp_path / "decode", "espnet2")
    assert back == flipped
    ids = sorted(u.id for u in original)
    by_id = {u.id: u for u in flipped}
    assert (tmp_path / "decode" / "text").read_text().splitlines() == [f"{i} {by_id[i].hyps[0].text}" for i in ids]
    assert [line.split()[0] for line in (tmp_path / "decode" / "score").read_text().splitlines()] == ids
    assert (tmp_path / "decode" / "score").read_text().splitlines()[0] == f"{ids[0]} {by_id[ids[0]].hyps[0].raw['score']}"


# ---------------------------------------------------------------- references
@pytest.mark.parametrize("rel, refs, expected", [
    pytest.param(ESPNET2, "espnet2/data/dev_clean/text", [LIBRI_0000, LIBRI_0001, LIBRI_UNIVERSE, "TEN SECONDS"],
                 id="espnet2+kaldi-text"),
    pytest.param(ESPNET2, "refs/ref.trn", [LIBRI_0000, LIBRI_0001, LIBRI_UNIVERSE, "TEN SECONDS"], id="espnet2+trn"),
    pytest.param(ESPNET1, None, ["HELLO BERTIE ANY GOOD IN YOUR MIND", "HE KNOWS THEM BOTH"], id="espnet1"),
    pytest.param(FAIRSEQ, None,
                 ["The house is small.", "I bought it yesterday.", "The negotiations continued in Brussels on Monday.",
                  "Yes."], id="fairseq-T-lines"),
    pytest.param(FAIRSEQ_09, None, ["thank you .", "that 's a good question .", "we must act ."], id="fairseq-0.9"),
    pytest.param(FAIRSEQ_INTERACTIVE, None, [None, None], id="fairseq-interactive"),
    pytest.param(MOSES, "refs/newstest.ref.en", ["this is a small house", "the house is big"], id="moses+lines"),
    pytest.param(MARIAN, None, [None, None], id="marian"),
    pytest.param(SOCKEYE, None, [None, None, None], id="sockeye"),
    pytest.param(NEMO, NEMO_MANIFEST,
                 [LIBRI_0000.lower(), LIBRI_0001.lower(), LIBRI_UNIVERSE.lower()], id="nemo+manifest"),
    pytest.param(KALDI, "refs/text",
                 ["STUFF IT INTO YOU HIS BELLY COUNSELLED HIM", "HE COULD WAIT NO LONGER"], id="kaldi+kaldi-text"),
    pytest.param(MLM, None, [LIBRI_0000.lower(), LIBRI_0001.lower()], id="mlm-scoring"),
    pytest.param(JSONL, None, ["the cat sat on the mat", None], id="jsonl"),
    pytest.param(HYPORADISE, None, ["the cat sat on the mat", "hello there world", "café crème brûlée au sucre"],
                 id="hyporadise"),
])
def test_references(rel, refs, expected):
    """References come from the file itself or are attached from .trn, Kaldi text, manifest or plain lines."""
    nbest = read(rel, refs=FIX / refs) if refs else read(rel)
    assert [u.ref for u in nbest] == expected


# ---------------------------------------------------------------- ESPnet2 / ESPnet1
def test_espnet2_jobs_ranks_and_scores():
    """Jobs are concatenated; tensor(...) reprs, device tags and plain floats all parse; raw keeps them."""
    u0, u1, u2, u3 = read(ESPNET2)
    assert texts(u0) == [LIBRI_0000, LIBRI_0000 + "S", LIBRI_0000.replace("APOSTLE", "APOSTLES")]
    assert column(u0) == [exact(-5.3164), exact(-7.9025), exact(-8.4410)]
    assert raw(u0) == ["tensor(-5.3164)", "tensor(-7.9025)", "tensor(-8.4410)"]
    assert u0.hyps[0].tokens == (
        "▁MISTER ▁QUI L TER ▁IS ▁THE ▁APOSTLE ▁OF ▁THE ▁MIDDLE ▁CLASSES ▁AND ▁WE ▁ARE ▁GLAD ▁TO ▁WELCOME ▁HIS ▁GOSPEL")
    # missing from 3best_recog: two hypotheses only
    assert texts(u1) == [LIBRI_0001, LIBRI_0001.replace("MANNER", "MANNERS")]
    # job 2 ran on the GPU; its third hypothesis is the empty line "1272-141231-0000 "
    assert texts(u2) == [LIBRI_UNIVERSE, LIBRI_UNIVERSE + "S", ""]
    assert column(u2) == [exact(-1.9837), exact(-12.0076), exact(-23.5140)]
    assert raw(u2)[1] == "tensor(-12.0076, device='cuda:0')"
    assert u2.hyps[2].tokens == ""
    # TooShortUttError placeholder: text " ", token <space>, plain float score 0.0 at every rank
    assert texts(u3) == ["", "", ""]
    assert [h.tokens for h in u3.hyps] == ["<space>"] * 3
    assert column(u3) == [0.0, 0.0, 0.0]
    assert raw(u3) == ["0.0"] * 3


def test_espnet1_bpe_marks_eos_and_meta():
    """rec_text loses <eos> and ▁; ranks come from target1[n]; the ground-truth fields are kept as meta."""
    u0, u1 = read(ESPNET1)
    assert texts(u0) == ["HELLO BERTIE ANY GOOD IN YOUR MIND", "HELLO BIRDIE ANY GOOD IN YOUR MIND",
                         "HELLO BERTIE ANY GOOD IN YOU MIND"]
    assert texts(u1) == ["HE KNOWS THEM BOTH", "HE NOSE THEM BOTH"]
    assert column(u0) == [exact(-1.1091572046279907), exact(-3.5204317569732666), exact(-4.87129020690918)]
    assert raw(u1) == ["-0.6633101105690002", "-2.901778221130371"]
    assert u1.hyps[1].tokens == "▁HE ▁NO SE ▁THEM ▁BOTH <eos>"
    assert u1.hyps[0].meta["shape"] == "[5, 5002]"
    assert u0.meta == {"utt2spk": '"1089-134686"'}


# ---------------------------------------------------------------- fairseq
def test_fairseq_generate_base2_detok_and_empty_hypothesis():
    """Ids are sorted; D is the text and H the tokens; base-2 scores become natural log (× ln 2)."""
    nbest = read(FAIRSEQ)
    assert nbest.meta == {"log_base": "2"}
    u0, u1, u2, u3 = nbest
    assert texts(u2) == ["The negotiations continued in Brussels on Monday.", "The talks continued in Brussels on Monday."]
    assert [h.tokens for h in u2.hyps] == ["The negoti@@ ations continued in Brussels on Monday .",
                                           "The talks continued in Brussels on Monday ."]
    assert column(u2) == [exact(-0.20792999863624573 * LN2), exact(-0.45331111550331116 * LN2)]
    assert raw(u2) == ["-0.20792999863624573", "-0.45331111550331116"]
    assert column(u0) == [exact(-0.1421000063419342 * LN2), exact(-0.34096667170524597 * LN2)]
    assert u1.meta == {"S": "Ich habe es gestern gekauft."}
    assert u0.hyps[1].meta == {"P": "-0.2217 -0.0931 -0.0544 -1.6122 -0.0611 -0.0033"}
    # "H-3\t-1.2028000354766846\t": an empty second hypothesis
    assert texts(u3) == ["Yes.", ""]
    assert u3.hyps[1].tokens == ""
    assert u3.hyps[1].scores == {"score": exact(-1.2028000354766846 * LN2)}


def test_fairseq_09_natural_log_without_d_lines():
    """Before 0.10 there are no D lines and H scores are already natural log."""
    nbest = read(FAIRSEQ_09)
    assert nbest.meta == {"log_base": "e"}
    u0, u1, u2 = nbest
    assert texts(u1) == ["that 's a good question .", "this is a good question ."]
    assert [h.tokens for h in u1.hyps] == [None, None]
    assert column(u0) == [exact(-0.09040000289678574), exact(-0.4583333432674408)]
    assert raw(u2) == ["-0.17028333246707916", "-0.36248332262039185"]
    assert u2.meta == {"S": "wir müssen handeln ."}


def test_fairseq_interactive_ignores_w_lines_and_has_no_reference():
    """S/W/H/D/P output: W lines are ignored, S is kept, scores are base 2."""
    u0, u1 = read(FAIRSEQ_INTERACTIVE)
    assert u0.meta == {"S": "Why is it rare to discover new marine mam@@ mal species ?"}
    assert texts(u0) == ["Warum ist es selten, neue Meeressäugetierarten zu entdecken?",
                         "Warum ist es so selten, neue Meeressäugetierarten zu entdecken?"]
    assert texts(u1) == ["Sprechen Sie Französisch?", "Sprichst du Französisch?"]
    assert column(u1) == [exact(-0.26715999841690063 * LN2), exact(-0.7007200121879578 * LN2)]


# ---------------------------------------------------------------- Moses / Marian
def test_moses_old_labels_columns():
    """'d: lm: w: tm:' labels: several values get _0, _1…; one value keeps the label; text loses its trailing space."""
    nbest = read(MOSES_OLD)
    assert nbest.meta == {"labels": "colon"}
    assert nbest.columns == [*(f"d_{i}" for i in range(7)), "lm", "w", *(f"tm_{i}" for i in range(5)), "total"]
    u0, u1 = nbest
    assert texts(u0) == ["taming politicians on both sides of the Atlantic",
                         "controlling politicians on both sides of the Atlantic",
                         "taming politicians on both sides of Atlantic"]
    first = u0.hyps[0]
    assert first.scores == {
        "d_0": 0.0, "d_1": exact(-1.51037), "d_2": 0.0, "d_3": 0.0, "d_4": exact(-2.60639), "d_5": 0.0, "d_6": 0.0,
        "lm": exact(-36.0562), "w": -8.0,
        "tm_0": exact(-5.97082), "tm_1": exact(-14.8327), "tm_2": exact(-2.41162), "tm_3": exact(-9.32734),
        "tm_4": exact(3.99959), "total": exact(-16.9717)}
    assert first.raw["tm_4"] == "3.99959" and first.raw["total"] == "-16.9717"
    assert column(u1, "w") == [-8.0, -8.0]
    assert column(u1, "total") == [exact(-10.5219), exact(-11.2703)]


def test_moses_new_labels_and_segmentation():
    """'Name0=' labels; -include-segmentation-in-n-best adds a field after the total, kept verbatim."""
    plain, segmented = read(MOSES), read(MOSES_SEGMENTATION)
    assert plain.meta == {"labels": "equals"}
    assert plain.columns == ["Distortion0", "LM0", "WordPenalty0", "PhrasePenalty0",
                             *(f"TranslationModel0_{i}" for i in range(4)), "total"]
    u0 = plain.utterances[0]
    assert texts(u0) == ["this is a small house", "this is a little house", "it is a small house"]
    assert column(u0, "LM0") == [exact(-21.0745), exact(-22.6361), exact(-23.3908)]
    assert column(u0, "PhrasePenalty0") == [2.0, 3.0, 2.0]
    assert u0.hyps[1].scores["TranslationModel0_3"] == exact(-3.06291)
    assert raw(plain.utterances[1], "TranslationModel0_2") == ["-0.916291", "-1.20397"]
    assert [h.meta for h in segmented.utterances[0].hyps] == [
        {"after": "0-1=0-1 2-4=2-4"}, {"after": "0-1=0-1 2=2 3-4=3-4"}, {"after": "0-1=0-1 2-4=2-4"}]
    for a, b in zip(plain, segmented):
        assert [h.scores for h in a.hyps] == [h.scores for h in b.hyps]
        assert texts(a) == texts(b)


def test_marian_spaced_glued_and_alignment_fields():
    """'F0= -2.4 F1= -2.9' and glued 'F0=-3.1' give the same columns; an alignment field before the features is kept."""
    ensemble = read(MARIAN)
    assert ensemble.columns == ["F0", "F1", "total"]
    u1 = ensemble.utterances[1]
    assert texts(u1) == ["Wir sehen uns morgen.", "Wir sehen uns dann morgen.", "Bis morgen."]
    assert u1.hyps[0].scores == {"F0": exact(-1.25738), "F1": exact(-8.40125), "total": exact(-0.57615)}
    glued = read(MARIAN_GLUED)
    assert glued.columns == ["F0", "total"]
    assert column(glued.utterances[0], "F0") == [exact(-1.84512), exact(-3.1)]
    assert raw(glued.utterances[0], "F0") == ["-1.84512", "-3.1"]
    aligned = read(MARIAN_ALIGN)
    assert texts(aligned.utterances[1]) == ["Ich spreche kein Franz@@ ösisch .", "Ich spreche nicht Franz@@ ösisch ."]
    assert aligned.utterances[0].hyps[0].meta == {"before": "0-0 1-1 2-2 3-3 4-4 5-5"}
    assert column(aligned.utterances[1], "total") == [exact(-3.0072), exact(-4.51846)]


# ---------------------------------------------------------------- Sockeye / NeMo / Kaldi / mlm-scoring / JSONL
def test_sockeye_costs_are_negated():
    """Sockeye scores are negative log-probs (lower is better): the column is their negation, raw the file value."""
    nbest = read(SOCKEYE)
    assert nbest.meta == {"factored": "0"}
    u0, u1, u2 = nbest
    assert texts(u0) == ["Keine Liber@@ alisierung für die Landwirtschaft .",
                         "Keine Liber@@ alisierung in der Landwirtschaft ."]
    assert column(u0) == [exact(-0.3771544098854065), exact(-0.4552134871482849)]
    assert raw(u0) == ["0.3771544098854065", "0.4552134871482849"]
    assert column(u2) == [exact(-0.15028390288352966), exact(-0.2640778124332428), exact(-0.7184401750564575)]


def test_sockeye_factored_scores_take_the_primary():
    """[primary, factor] score lists: the primary is the score, the rest stays as meta."""
    nbest = read(SOCKEYE_FACTORED)
    assert nbest.meta == {"factored": "1"}
    u0, u1 = nbest
    assert texts(u1) == ["wir müssen handeln .", "wir müssen jetzt handeln ."]
    assert column(u0) == [exact(-0.41269999742507935), exact(-0.5216000080108643)]
    assert [h.meta for h in u0.hyps] == [{"factors": "[0.041200000792741776]"}, {"factors": "[0.0731000006198883]"}]
    assert u0.meta["factor1"] == '"U L L L O"'


def test_nemo_beams_grouped_by_manifest():
    """beam_size consecutive lines per manifest line; ids are the audio file stems."""
    nbest = read(NEMO)
    assert nbest.meta == {"beam_size": "4"}
    u0, u1, u2 = nbest
    assert texts(u1) == ["nor is mister quilter's manner less interesting than his matter",
                         "nor is mister quilter's manner less interesting than his madder",
                         "nor is mister quilters manner less interesting than his matter",
                         "nor is mister quilter's manners less interesting than his matter"]
    assert column(u2) == [exact(-2.2096593379974365), exact(-5.771284103393555),
                          exact(-6.3044586181640625), exact(-7.918331146240234)]
    assert raw(u0)[3] == "-11.239105224609375"


def test_kaldi_costs_are_negated():
    """acwt/lmwt.nolm/lmwt.withlm costs become am/graph/lm log-probs; keys split on the last '-'."""
    nbest = read(KALDI)
    assert nbest.columns == ["am", "graph", "lm"]
    u0, u1 = nbest
    assert texts(u0) == ["STUFF IT INTO YOU HIS BELLY COUNSELLED HIM", "STUFF IT INTO YOU HIS BELLY COUNSELED HIM",
                         "STUFF IT IN TO YOU HIS BELLY COUNSELLED HIM"]
    assert u0.hyps[0].scores == {"am": exact(-2310.77), "graph": exact(-45.2134), "lm": exact(-43.9817)}
    assert u0.hyps[0].raw == {"am": "2310.77", "graph": "45.2134", "lm": "43.9817"}
    assert column(u1, "lm") == [exact(-20.8865), exact(-23.1704)]


def test_mlm_scoring_sorted_ids_ranked_keys_and_stripped_text():
    """Utterances in sorted() order, hyp_k at index k-1 whatever the JSON order, ref and text stripped."""
    u0, u1 = read(MLM)
    assert texts(u0) == [LIBRI_0000.lower(), LIBRI_0000.lower() + "s",
                         LIBRI_0000.lower().replace("apostle", "apostles")]
    assert column(u0) == [exact(-5.316431999206543), exact(-7.902544975280762), exact(-8.440982818603516)]
    assert raw(u1) == ["-2.778076410293579", "-9.152973175048828"]
    ints = read(MLM_INT)
    assert [u.ref for u in ints] == ["hello world", "the quick brown fox"]
    assert column(ints.utterances[0]) == [-5.0, -6.5]
    assert raw(ints.utterances[0]) == ["-5", "-6.5"]


def test_jsonl_canonical_fields():
    """The canonical JSONL keeps every score column, raw value, tokens and meta as written."""
    u0, u1 = read(JSONL)
    assert u0.hyps[0].scores == {"am": -4.25, "lm": -12.5}
    assert u0.hyps[0].raw == {"am": "tensor(-4.2500)"}
    assert u0.hyps[1].tokens == "▁the ▁cat ▁sat ▁on ▁a ▁mat"
    assert u0.hyps[2].raw == {} and u0.hyps[2].tokens is None
    assert texts(u1) == ["hello world", ""]
    assert u1.hyps[0].meta == {"beam": "1"}
    assert u1.meta == {"speaker": "spk-2"}
