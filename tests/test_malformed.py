"""Malformed N-best inputs: every error names the file, the offending line and the offending value.

Each case writes a small bad input by hand; row ``i`` of ``lines(...)`` is line ``i + 1``.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest

import rescorer

CLI = Path(sys.executable).with_name("rescorer")


# ---------------------------------------------------------------- helpers
def lines(*rows: str) -> str:
    """A file body with one row per line."""
    return "".join(f"{row}\n" for row in rows)


def corrupt(body: str, line: int) -> bytes:
    """``body`` as UTF-8 with an invalid byte (0xff) in the middle of ``line``."""
    rows = body.encode("utf-8").split(b"\n")
    row = rows[line - 1]
    rows[line - 1] = row[: len(row) // 2] + b"\xff" + row[len(row) // 2 :]
    return b"\n".join(rows)


def build(root: Path, files: dict[str, str | bytes]) -> None:
    """Write ``files`` (path relative to ``root`` → text or bytes)."""
    for name, body in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body if isinstance(body, bytes) else body.encode("utf-8"))


def check_message(err: rescorer.NBestFormatError, where: str, value: str) -> None:
    """``where`` (``name:line``, or ``name`` alone) ends a path in the message; ``value`` follows it."""
    message = str(err)
    assert re.search(rf"(^|/){re.escape(where)}(?!\d)", message), message
    assert value in message[len(err.path):], message


class Case(NamedTuple):
    files: dict[str, str | bytes]
    nbest: str
    fmt: str
    where: str
    value: str
    refs: str | None
    options: dict[str, Any]


def case(id: str, files: dict, nbest: str, fmt: str, where: str, value: str,
         refs: str | None = None, **options: Any):
    """One parametrized case."""
    return pytest.param(Case(files, nbest, fmt, where, value, refs, options), id=id)


# ---------------------------------------------------------------- format builders
MOSES_OK = "0 ||| a b ||| lm: -1.5 tm: -2 ||| -3.5"
MANIFEST = lines('{"audio_filepath": "wavs/u1.wav", "text": "a b"}',
                 '{"audio_filepath": "wavs/u2.wav", "text": "c d"}')
RANK_OK = {"text": ["utt1 a b", "utt2 c d"], "score": ["utt1 tensor(-1.5)", "utt2 tensor(-2.5)"]}


def body(rows: list[str] | tuple[str, ...] | bytes) -> str | bytes:
    return rows if isinstance(rows, bytes) else lines(*rows)


def moses(*rows: str) -> dict:
    return {"nbest.txt": lines(*rows)}


def rank(**files: list[str] | bytes) -> dict:
    """One ``<n>best_recog`` directory: the good text/score files with ``files`` replaced or added."""
    return {**RANK_OK, **files}


def espnet2(*ranks: dict, root: str = "dec") -> dict:
    """``<root>/<n>best_recog/<file>`` for ranks 1, 2, ...; a ``None`` rank is left out."""
    return {f"{root}/{n}best_recog/{name}": body(rows)
            for n, files in enumerate(ranks, 1) if files is not None for name, rows in files.items()}


def kaldi(words=("utt1-1 a b", "utt1-2 a c"), acwt=("utt1-1 12.5", "utt1-2 13.0")) -> dict:
    return {"nb/words_text": body(words), "nb/acwt": body(acwt)}


def nemo(*rows: str, manifest: str = MANIFEST) -> dict:
    return {"beams.tsv": lines(*rows), "manifest.json": manifest}


def fairseq(*rows: str) -> dict:
    return {"gen.txt": lines(*rows)}


def jsonl(*rows: str) -> dict:
    return {"nbest.jsonl": lines(*rows)}


def sockeye(*rows: str) -> dict:
    return {"out.json": lines(*rows)}


def mlm(*rows: str) -> dict:
    return {"am.json": lines(*rows)}


def espnet1(*rows: str) -> dict:
    return {"data.json": lines(*rows)}


def mlm_utt(uid: str, *hyps: str) -> tuple[str, ...]:
    """An mlm-scoring document: line 2 holds ``uid``, each hyp entry follows on its own line."""
    entries = [f"    {h}," for h in hyps[:-1]] + [f"    {hyps[-1]}}}"]
    return ("{", f'  "{uid}": {{"ref": "a b",', *entries, "}")


def espnet1_utt(*outputs: str) -> tuple[str, ...]:
    """An ESPnet1 data.json with utterance ``utt1`` on line 3 and one output entry per line from line 5."""
    entries = [f"                {o}," for o in outputs[:-1]] + [f"                {outputs[-1]}"]
    return ("{", '    "utts": {', '        "utt1": {', '            "output": [', *entries,
            "            ]", "        }", "    }", "}")


ESPNET1_COMMA = espnet1_utt('{"name": "target1[1]", "rec_text": "a b<eos>", "score": -1.0,}')  # line 5
MLM_HYP = '"hyp_1": {"score": -5, "text": "a b"}'
JSONL_OK = '{"id": "u1", "hyps": [{"text": "a b", "scores": {"am": -1.0}}]}'
SOCKEYE_OK = '{"sentence_id": 1, "translation": "a b", "score": 0.5}'

# ---------------------------------------------------------------- the cases
TRUNCATED = [
    case("moses-2-fields", moses(MOSES_OK, "1 ||| c d"), "nbest.txt", "moses", "nbest.txt:2", "1 ||| c d"),
    case("moses-3-fields", moses(MOSES_OK, "1 ||| c d ||| lm: -1"), "nbest.txt", "moses", "nbest.txt:2", "lm: -1"),
    case("espnet2-score-no-value", espnet2(rank(score=["utt1 tensor(-1.5)", "utt2"])), "dec", "espnet2",
         "1best_recog/score:2", "utt2"),
    case("nemo-no-tab", nemo("a b\t-1.5", "c d -2.5"), "beams.tsv", "nemo", "beams.tsv:2", "c d -2.5",
         refs="manifest.json"),
    case("kaldi-cost-no-cost", kaldi(acwt=["utt1-1 12.5", "utt1-2"]), "nb", "kaldi", "acwt:2", "utt1-2"),
]

NOT_A_NUMBER = [
    case("espnet2-score", espnet2(rank(score=["utt1 tensor(-1.5)", "utt2 tensor(abc)"])), "dec", "espnet2",
         "1best_recog/score:2", "tensor(abc)"),
    case("espnet2-scores-json-part",
         espnet2(rank(scores=['utt1 {"decoder": -1.0}', 'utt2 {"decoder": "abc"}'])), "dec", "espnet2",
         "1best_recog/scores:2", "abc"),
    case("espnet2-scores-not-json", espnet2(rank(scores=['utt1 {"decoder": -1.0}', "utt2 decoder=-2"])),
         "dec", "espnet2", "1best_recog/scores:2", "decoder=-2"),
    case("fairseq-h-line", fairseq("S-0\tx y", "H-0\tabc\ta b", "D-0\tabc\ta b"), "gen.txt", "fairseq",
         "gen.txt:2", "abc"),
    case("moses-feature", moses(MOSES_OK, "0 ||| c ||| lm: -1 tm: x1 ||| -2"), "nbest.txt", "moses",
         "nbest.txt:2", "x1"),
    case("moses-total", moses(MOSES_OK, "1 ||| c ||| lm: -1 tm: -2 ||| n/a"), "nbest.txt", "moses",
         "nbest.txt:2", "n/a"),
    case("sockeye-score", sockeye(SOCKEYE_OK, '{"sentence_id": 2, "translation": "c", "score": "abc"}'),
         "out.json", "sockeye", "out.json:2", "abc"),
    case("mlm-scoring-score", mlm(*mlm_utt("utt1", MLM_HYP, '"hyp_2": {"score": "abc", "text": "a c"}')),
         "am.json", "mlm-scoring", "am.json:4", "abc"),
    case("jsonl-score", jsonl(JSONL_OK, '{"id": "u2", "hyps": [{"text": "c", "scores": {"am": "abc"}}]}'),
         "nbest.jsonl", "jsonl", "nbest.jsonl:2", "abc"),
    case("nemo-score", nemo("a b\t-1.5", "c d\tabc"), "beams.tsv", "nemo", "beams.tsv:2", "abc",
         refs="manifest.json"),
    case("nemo-decimal-comma", nemo("a b\t-1.5", "c d\t-8,4153"), "beams.tsv", "nemo", "beams.tsv:2", "-8,4153",
         refs="manifest.json"),
    case("kaldi-cost", kaldi(acwt=["utt1-1 12.5", "utt1-2 abc"]), "nb", "kaldi", "acwt:2", "abc"),
]

NOT_FINITE = [
    case("espnet2-nan", espnet2(rank(score=["utt1 tensor(-1.5)", "utt2 tensor(nan)"])), "dec", "espnet2",
         "1best_recog/score:2", "tensor(nan)"),
    case("espnet2-plus-inf", espnet2(rank(score=["utt1 tensor(-1.5)", "utt2 tensor(inf)"])), "dec", "espnet2",
         "1best_recog/score:2", "tensor(inf)"),
    case("fairseq-nan", fairseq("S-0\tx y", "H-0\tnan\ta b", "D-0\tnan\ta b"), "gen.txt", "fairseq",
         "gen.txt:2", "nan"),
    case("moses-feature-nan", moses(MOSES_OK, "0 ||| c ||| lm: nan tm: -2 ||| -2"), "nbest.txt", "moses",
         "nbest.txt:2", "nan"),
    case("nemo-plus-inf", nemo("a b\t-1.5", "c d\t+inf"), "beams.tsv", "nemo", "beams.tsv:2", "+inf",
         refs="manifest.json"),
    case("jsonl-nan", jsonl(JSONL_OK, '{"id": "u2", "hyps": [{"text": "c", "scores": {"am": NaN}}]}'),
         "nbest.jsonl", "jsonl", "nbest.jsonl:2", "NaN"),
    case("kaldi-cost-minus-inf", kaldi(acwt=["utt1-1 12.5", "utt1-2 -inf"]), "nb", "kaldi", "acwt:2", "-inf"),
]

DUPLICATES = [
    case("espnet2-duplicate-id", espnet2(rank(text=["utt1 a b", "utt2 c d", "utt1 e f"])), "dec", "espnet2",
         "1best_recog/text:3", "utt1"),
    case("espnet1-duplicate-target",
         espnet1(*espnet1_utt('{"name": "target1[1]", "rec_text": "a b<eos>", "score": -1.0}',
                              '{"name": "target1[1]", "rec_text": "a c<eos>", "score": -2.0}')),
         "data.json", "espnet1", "data.json:6", "utt1"),
    case("kaldi-duplicate-key", kaldi(words=["utt1-1 a b", "utt1-2 a c", "utt1-1 a d"]), "nb", "kaldi",
         "words_text:3", "utt1-1"),
    case("kaldi-duplicate-key-in-cost", kaldi(acwt=["utt1-1 12.5", "utt1-2 13.0", "utt1-1 14.0"]), "nb", "kaldi",
         "acwt:3", "utt1-1"),
    case("kaldi-rank-leading-zero", kaldi(words=["utt1-01 a b"], acwt=["utt1-01 12.5"]), "nb", "kaldi",
         "words_text:1", "utt1-01"),
    case("jsonl-duplicate-id", jsonl(JSONL_OK, JSONL_OK), "nbest.jsonl", "jsonl", "nbest.jsonl:2", "u1"),
    case("sockeye-duplicate-sentence-id",
         sockeye('{"sentence_id": 7, "translation": "a", "score": 0.5}',
                 '{"sentence_id": 7, "translation": "b", "score": 0.7}'), "out.json", "sockeye", "out.json:2", "7"),
    case("moses-id-in-two-blocks", moses(MOSES_OK, "1 ||| c ||| lm: -1 tm: -2 ||| -3", MOSES_OK), "nbest.txt",
         "moses", "nbest.txt:3", "0"),
]

RANK_GAPS = [
    case("espnet2-3best-without-2best",
         espnet2(rank(), rank(text=["utt1 a c"], score=["utt1 tensor(-3.0)"]), rank()), "dec", "espnet2",
         "3best_recog/text:2", "utt2"),
    case("espnet2-missing-rank-dir", espnet2(rank(), None, rank()), "dec", "espnet2", "2best_recog",
         "2best_recog"),
    case("mlm-scoring-hyp-1-and-3", mlm(*mlm_utt("utt1", MLM_HYP, '"hyp_3": {"score": -6, "text": "a c"}')),
         "am.json", "mlm-scoring", "am.json:2", "utt1"),
    case("mlm-scoring-gap-non-ascii-id",
         mlm(*mlm_utt("\u00fctt1", MLM_HYP, '"hyp_3": {"score": -6, "text": "a c"}')), "am.json", "mlm-scoring",
         "am.json:2", "\u00fctt1"),
    case("kaldi-1-and-3", kaldi(words=["utt1-1 a b", "utt1-3 a c"], acwt=["utt1-1 12.5", "utt1-3 13.0"]), "nb",
         "kaldi", "words_text:1", "utt1"),
]

REFERENCES = [
    case("trn-lacks-hyp-id", {**espnet2(rank()), "ref.trn": lines("a b (utt1)")}, "dec", "espnet2",
         "1best_recog/text:2", "utt2", refs="ref.trn"),
    case("trn-has-extra-id", {**espnet2(rank()), "ref.trn": lines("a b (utt1)", "c d (utt2)", "e f (utt3)")},
         "dec", "espnet2", "ref.trn:3", "utt3", refs="ref.trn"),
    case("trn-duplicate-id", {**espnet2(rank()), "ref.trn": lines("a b (utt1)", "c d (utt1)")}, "dec", "espnet2",
         "ref.trn:2", "utt1", refs="ref.trn"),
    case("trn-line-without-id", {**espnet2(rank()), "ref.trn": lines("a b (utt1)", "c d utt2")}, "dec",
         "espnet2", "ref.trn:2", "c d utt2", refs="ref.trn"),
    case("kaldi-text-wrong-id", {**espnet2(rank()), "data/text": lines("utt1 a b", "utt3 c d")}, "dec", "espnet2",
         "1best_recog/text:2", "utt2", refs="data/text", refs_fmt="kaldi"),
    case("kaldi-text-wrong-id-auto", {**espnet2(rank()), "data/text": lines("utt1 a b", "utt3 c d")}, "dec",
         "espnet2", "1best_recog/text:2", "utt2", refs="data/text"),
    case("lines-more-refs", {**moses(MOSES_OK, "1 ||| c ||| lm: -1 tm: -2 ||| -3"),
                             "refs.txt": lines("a b", "c", "e f")},
         "nbest.txt", "moses", "refs.txt", "3 references", refs="refs.txt"),
    case("lines-fewer-refs", {**moses(MOSES_OK, "1 ||| c ||| lm: -1 tm: -2 ||| -3"), "refs.txt": lines("a b")},
         "nbest.txt", "moses", "nbest.txt:2", "(1 lines;", refs="refs.txt"),
    case("refs-missing-file", espnet2(rank()), "dec", "espnet2", "nope.trn", "no such file", refs="nope.trn"),
    case("refs-unknown-format", {**espnet2(rank()), "ref.trn": lines("a b (utt1)", "c d (utt2)")}, "dec",
         "espnet2", "ref.trn", "trm", refs="ref.trn", refs_fmt="trm"),
]

EMPTY = [
    case(f"empty-{fmt}", {name: b""}, name, fmt, name, "empty")
    for fmt, name in [("moses", "nbest.txt"), ("fairseq", "gen.txt"), ("sockeye", "out.json"),
                      ("mlm-scoring", "am.json"), ("espnet1", "data.json"), ("auto", "x.txt")]
] + [
    case("empty-jsonl-blank-lines", {"nbest.jsonl": "\n \n"}, "nbest.jsonl", "jsonl", "nbest.jsonl", "empty"),
    case("empty-nemo", {"beams.tsv": b"", "manifest.json": MANIFEST}, "beams.tsv", "nemo", "beams.tsv", "empty",
         refs="manifest.json"),
    case("empty-nemo-manifest", nemo("a b\t-1.5", manifest=""), "beams.tsv", "nemo", "manifest.json", "empty",
         refs="manifest.json"),
    case("empty-espnet2-text", espnet2(rank(text=b"")), "dec", "espnet2", "1best_recog/text", "empty"),
    case("empty-kaldi-words", kaldi(words=b""), "nb", "kaldi", "words_text", "empty"),
    case("empty-refs", {**espnet2(rank()), "ref.trn": b""}, "dec", "espnet2", "ref.trn", "empty", refs="ref.trn"),
    case("empty-moses-bom-only", {"nbest.txt": b"\xef\xbb\xbf"}, "nbest.txt", "moses", "nbest.txt", "empty"),
    case("no-utterances-espnet1", espnet1('{"utts": {}}'), "data.json", "espnet1", "data.json", "utterance"),
    case("no-utterances-mlm-scoring", mlm("{}"), "am.json", "mlm-scoring", "am.json", "utterance"),
]

MISSING = [
    case("missing-file", {}, "nope.txt", "moses", "nope.txt", "no such file"),
    case("missing-file-auto", {}, "nope.txt", "auto", "nope.txt", "no such file"),
    case("missing-espnet2-dir", {}, "dec", "espnet2", "dec", "best_recog"),
    case("kaldi-dir-without-words", {"nb/acwt": lines("utt1-1 12.5")}, "nb", "kaldi", "nb", "words_text"),
    case("espnet2-id-in-two-jobs",
         {**espnet2(rank(), root="dec/logdir/output.1"), **espnet2(rank(), root="dec/logdir/output.2")},
         "dec", "espnet2", "dec", "utt1"),
]

UNDECODABLE = [
    case(f"undecodable-{id}", {**files, name: corrupt(good, 3)}, nbest, fmt, f"{where}:3", "\\xff", refs=refs)
    for id, files, name, good, nbest, fmt, where, refs in [
        ("moses", {}, "nbest.txt", lines(MOSES_OK, MOSES_OK, "1 ||| c d ||| lm: -1 tm: -2 ||| -3"),
         "nbest.txt", "moses", "nbest.txt", None),
        ("fairseq", {}, "gen.txt", lines("S-0\tx", "H-0\t-0.5\ta b", "D-0\t-0.5\ta b"), "gen.txt", "fairseq",
         "gen.txt", None),
        ("jsonl", {}, "nbest.jsonl", lines(JSONL_OK, JSONL_OK.replace("u1", "u2"), JSONL_OK.replace("u1", "u3")),
         "nbest.jsonl", "jsonl", "nbest.jsonl", None),
        ("nemo", {"manifest.json": MANIFEST}, "beams.tsv", lines("a\t-1", "b\t-2", "c d e\t-3", "f\t-4"),
         "beams.tsv", "nemo", "beams.tsv", "manifest.json"),
        ("espnet2-text", espnet2(rank()), "dec/1best_recog/text", lines("utt1 a b", "utt2 c d", "utt3 e f"),
         "dec", "espnet2", "1best_recog/text", None),
        ("kaldi-words", kaldi(), "nb/words_text", lines("utt1-1 a b", "utt1-2 a c", "utt1-3 d e"), "nb", "kaldi",
         "words_text", None),
        ("trn-refs", espnet2(rank()), "ref.trn", lines("a b (utt1)", "c d (utt2)", "e f g (utt3)"), "dec",
         "espnet2", "ref.trn", "ref.trn"),
        ("auto", {}, "x.txt", lines(MOSES_OK, MOSES_OK, "1 ||| c d ||| lm: -1 tm: -2 ||| -3"), "x.txt", "auto",
         "x.txt", None),
    ]
]

UNKNOWN_FORMAT = [
    case("auto-random-text", {"notes.txt": lines("lorem ipsum dolor", "sit amet")}, "notes.txt", "auto",
         "notes.txt:1", "lorem ipsum"),
    case("auto-random-dir", {"somedir/readme": lines("hello")}, "somedir", "auto", "somedir",
         "unknown N-best directory layout"),
    case("unknown-fmt-name", moses(MOSES_OK), "nbest.txt", "mosses", "nbest.txt", "mosses"),
]

INVALID_JSON = [
    case("jsonl-line-2", jsonl(JSONL_OK, '{"id": "u2", "hyps": [}'), "nbest.jsonl", "jsonl", "nbest.jsonl:2",
         '"hyps": [}'),
    case("sockeye-line-2", sockeye(SOCKEYE_OK, '{"sentence_id": 2, "translation": "c" "score": 1}'), "out.json",
         "sockeye", "out.json:2", '"translation": "c" "score"'),
    case("espnet1-data-json", espnet1(*ESPNET1_COMMA), "data.json", "espnet1", "data.json:5", '"score": -1.0,}'),
    case("espnet1-data-json-auto", espnet1(*ESPNET1_COMMA), "data.json", "auto", "data.json:5", '"score": -1.0,}'),
    case("espnet1-truncated", espnet1("{", '    "utts": {', '        "utt1": {'), "data.json", "espnet1",
         "data.json:3", '"utt1": {'),
    case("mlm-scoring-broken", mlm(*mlm_utt("utt1", MLM_HYP, '"hyp_2": {"score": -6 "text": "a c"}')),
         "am.json", "mlm-scoring", "am.json:4", '"score": -6 "text"'),
    case("mlm-scoring-truncated", mlm("{", '  "utt1": {"ref": "a b",'), "am.json", "mlm-scoring", "am.json:2",
         '"ref": "a b"'),
    case("nemo-manifest-line-2", nemo("a b\t-1.5", "c d\t-2.5",
                                      manifest=lines('{"audio_filepath": "u1.wav", "text": "a b"}',
                                                     '{"audio_filepath": "u2.wav", "text": "c d"')),
         "beams.tsv", "nemo", "manifest.json:2", '"text": "c d"', refs="manifest.json"),
]

SURROGATE = "\\ud800"  # the JSON escape of half a UTF-16 pair: no Unicode text holds it
LONE = f"the text holds a lone surrogate escape {SURROGATE}: not valid Unicode"
HYPORADISE_OK = '  {"id": "u1", "input": ["a b", "a c"], "output": "a b"}'
LONE_SURROGATES = [
    case("lone-surrogate-jsonl-text", jsonl(JSONL_OK, JSONL_OK.replace('"a b"', f'"{SURROGATE}"').replace("u1", "u2")),
         "nbest.jsonl", "jsonl", "nbest.jsonl:2", LONE),
    case("lone-surrogate-jsonl-id", jsonl(JSONL_OK, JSONL_OK.replace('"u1"', f'"u{SURROGATE}"')), "nbest.jsonl", "auto",
         "nbest.jsonl:2", LONE),
    case("lone-surrogate-jsonl-low-half", jsonl(JSONL_OK.replace('"a b"', '"a \\udc00 b"')), "nbest.jsonl", "jsonl",
         "nbest.jsonl:1", "lone surrogate escape \\udc00"),
    case("lone-surrogate-sockeye", sockeye(SOCKEYE_OK, SOCKEYE_OK.replace('"a b"', f'"a{SURROGATE}"').replace("1,", "2,")),
         "out.json", "sockeye", "out.json:2", LONE),
    case("lone-surrogate-hyporadise", {"list.json": lines("[", HYPORADISE_OK + ",", HYPORADISE_OK.replace("a c", SURROGATE), "]")},
         "list.json", "auto", "list.json:3", LONE),
    case("lone-surrogate-hyporadise-first-record", {"list.json": lines("[", HYPORADISE_OK.replace('"u1"', f'"{SURROGATE}"'), "]")},
         "list.json", "auto", "list.json:2", LONE),
    case("lone-surrogate-mlm-scoring", mlm(*mlm_utt("utt1", MLM_HYP.replace("a b", SURROGATE))), "am.json", "mlm-scoring",
         "am.json:3", LONE),
    case("lone-surrogate-espnet1", espnet1(*espnet1_utt(f'{{"name": "target1[1]", "rec_text": "{SURROGATE}<eos>", "score": -1}}')),
         "data.json", "espnet1", "data.json:5", LONE),
    case("lone-surrogate-fields", {"rows.jsonl": lines(f'{{"key": "{SURROGATE}", "nbest": ["a"], "am": [-1]}}')}, "rows.jsonl",
         "fields", "rows.jsonl:1", LONE, fields={"id": "key", "hyps": "nbest", "scores": ["am"]}),
    case("lone-surrogate-nemo-manifest", nemo("a b\t-1.5", "c d\t-2.5", manifest=lines(
        '{"audio_filepath": "u1.wav", "text": "a b"}', f'{{"audio_filepath": "u2.wav", "text": "{SURROGATE}"}}')),
         "beams.tsv", "nemo", "manifest.json:2", LONE, refs="manifest.json"),
]

DEEP = "[" * 100_000 + "]" * 100_000  # a recursive reader's stack runs out long before
NESTED_TOO_DEEP = [
    case("nested-too-deep-jsonl", jsonl(JSONL_OK, JSONL_OK.replace('"hyps"', f'"x": {DEEP}, "hyps"').replace("u1", "u2")),
         "nbest.jsonl", "auto", "nbest.jsonl:2", "nested too deep"),
    case("nested-too-deep-sockeye", sockeye(SOCKEYE_OK.replace('"score"', f'"x": {DEEP}, "score"')), "out.json", "sockeye",
         "out.json:1", "nested too deep"),
    case("nested-too-deep-hyporadise", {"list.json": lines("[", HYPORADISE_OK + ",", HYPORADISE_OK.replace("[", f"[{DEEP}, ", 1),
                                           "]")}, "list.json", "auto", "list.json:3", "nested too deep"),
    case("nested-too-deep-json-list-of-lists", {"list.json": DEEP}, "list.json", "auto", "list.json:1", "nested too deep"),
    case("nested-too-deep-mlm-scoring", mlm(*mlm_utt("utt1", MLM_HYP, f'"x": {DEEP}')), "am.json", "mlm-scoring", "am.json:4",
         "nested too deep"),
    case("nested-too-deep-espnet1", espnet1("{", f'    "x": {DEEP},', '    "utts": {}', "}"), "data.json", "auto", "data.json:2",
         "nested too deep"),
    case("nested-too-deep-nemo-manifest", nemo("a b\t-1.5", manifest=lines(f'{{"audio_filepath": "u1.wav", "x": {DEEP}}}')),
         "beams.tsv", "nemo", "manifest.json:1", "nested too deep", refs="manifest.json"),
]

LAYOUT = [
    case("fairseq-d-before-h", fairseq("S-0\tx y", "D-0\t-0.5\ta b", "H-0\t-0.5\ta b"), "gen.txt", "fairseq",
         "gen.txt:2", "D-0"),
    case("fairseq-h-line-with-spaces",
         fairseq("S-0\tx y", "H-0\t-0.5\ta b", "D-0\t-0.5\ta b", "H-1 -0.7 c d"), "gen.txt", "fairseq",
         "gen.txt:4", "H-1"),
    case("moses-blank-line", moses(MOSES_OK, "", MOSES_OK), "nbest.txt", "moses", "nbest.txt:2", "blank"),
    case("moses-line-separator-in-text",
         moses("0 ||| a\u2028b ||| lm: -1 tm: -2 ||| -3", "1 ||| c d ||| lm: -1 tm: -2 ||| n/a"), "nbest.txt",
         "moses", "nbest.txt:2", "n/a"),
    case("nemo-beams-do-not-divide-manifest", nemo("a\t-1", "b\t-2", "c\t-3", "d\t-4", "e\t-5"), "beams.tsv",
         "nemo", "beams.tsv", "5 beams", refs="manifest.json"),
    case("nemo-lines-not-multiple-of-beam-size", nemo("a\t-1", "b\t-2", "c\t-3"), "beams.tsv", "nemo",
         "beams.tsv", "beam_size", beam_size=2),
    case("kaldi-key-without-rank", kaldi(words=["utt1-1 a b", "utt1 a c"]), "nb", "kaldi", "words_text:2", "utt1"),
    case("kaldi-cost-key-not-in-words", kaldi(acwt=["utt1-1 12.5", "utt1-2 13.0", "utt9-1 1.0"]), "nb", "kaldi",
         "acwt:3", "utt9-1"),
    case("espnet2-score-id-not-in-text",
         espnet2(rank(score=["utt1 tensor(-1.5)", "utt2 tensor(-2.5)", "utt3 tensor(-1.0)"])), "dec", "espnet2",
         "1best_recog/score:3", "utt3"),
]

ALL_CASES = (TRUNCATED + NOT_A_NUMBER + NOT_FINITE + DUPLICATES + RANK_GAPS + REFERENCES + EMPTY + MISSING
             + UNDECODABLE + UNKNOWN_FORMAT + INVALID_JSON + LONE_SURROGATES + NESTED_TOO_DEEP + LAYOUT)


@pytest.mark.parametrize("bad", ALL_CASES)
def test_reader_rejects_malformed_input_with_location(tmp_path: Path, bad: Case) -> None:
    """The reader raises NBestFormatError naming the file, the line and the offending value."""
    build(tmp_path, bad.files)
    refs = tmp_path / bad.refs if bad.refs else None
    with pytest.raises(rescorer.NBestFormatError) as info:
        rescorer.read_nbest(tmp_path / bad.nbest, fmt=bad.fmt, refs=refs, **bad.options)
    check_message(info.value, bad.where, bad.value)


@pytest.mark.parametrize("files, name, fmt, last", [
    pytest.param(jsonl('{"id": "u1", "hyps": [{"text": "a", "text": "b", "scores": {"am": -1.0, "am": -2.0}}]}'),
                 "nbest.jsonl", "jsonl", ("b", -2.0), id="jsonl"),
    pytest.param(mlm(*mlm_utt("utt1", MLM_HYP, '"hyp_1": {"score": -6, "text": "b"}')), "am.json", "mlm-scoring",
                 ("b", -6.0), id="mlm-scoring"),
])
def test_a_key_given_twice_keeps_its_last_value_as_json_loads_does(tmp_path: Path, files: dict, name: str, fmt: str,
                                                                  last: tuple) -> None:
    build(tmp_path, files)
    first = rescorer.read_nbest(tmp_path / name, fmt=fmt).utterances[0].hyps[0]
    assert (first.text, *first.scores.values()) == last
    peer = json.loads((tmp_path / name).read_text(encoding="utf-8").splitlines()[0] if fmt == "jsonl" else
                      (tmp_path / name).read_text(encoding="utf-8"))
    hyp = peer["hyps"][0] if fmt == "jsonl" else peer["utt1"]["hyp_1"]
    assert (hyp["text"], *(hyp["scores"].values() if fmt == "jsonl" else [hyp["score"]])) == last


# ---------------------------------------------------------------- writers: no output on failure
UNEQUAL_BEAMS = jsonl('{"id": "u1", "hyps": [{"text": "a b", "scores": {"am": -1.0}}, '
                      '{"text": "a c", "scores": {"am": -2.0}}]}',
                      '{"id": "u2", "hyps": [{"text": "c d", "scores": {"am": -1.5}}]}')


@pytest.mark.parametrize("files, fmt, out, value", [
    pytest.param(UNEQUAL_BEAMS, "nemo", "beams.tsv", "[1, 2]", id="nemo-unequal-beams"),
    pytest.param(UNEQUAL_BEAMS, "nemoo", "beams.tsv", "nemoo", id="unknown-fmt-name"),
    pytest.param(jsonl('{"id": "utt 1", "hyps": [{"text": "a b", "scores": {"am": -1.0}}]}'), "espnet2", "dec",
                 "utt 1", id="espnet2-id-with-space"),
    pytest.param(jsonl('{"id": "u1", "hyps": [{"text": "a\\nb", "scores": {"am": -1.0}}]}'), "nemo", "beams.tsv",
                 "a\\nb", id="nemo-newline-in-text"),
])
def test_writer_failure_leaves_no_output(tmp_path: Path, files: dict, fmt: str, out: str, value: str) -> None:
    """A writer that cannot represent the N-best raises and leaves nothing (not even a temp file) behind."""
    build(tmp_path, files)
    nbest = rescorer.read_nbest(tmp_path / "nbest.jsonl", fmt="jsonl")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    options = {"manifest": out_dir / "manifest.json"} if fmt == "nemo" else {}
    with pytest.raises(rescorer.NBestFormatError) as info:
        rescorer.write_nbest(nbest, out_dir / out, fmt=fmt, **options)
    check_message(info.value, out, value)
    assert list(out_dir.iterdir()) == []


# ---------------------------------------------------------------- the command line
@pytest.mark.parametrize("fmt, name, text, where", [
    pytest.param("moses", "bad.txt", lines(MOSES_OK, "1 ||| c d"), "bad.txt:2", id="moses-truncated"),
    pytest.param("espnet1", "data.json", lines('{"utts": {}}'), "data.json", id="espnet1-no-utterances"),
])
def test_cli_reports_malformed_input_without_traceback(tmp_path: Path, fmt: str, name: str, text: str,
                                                       where: str) -> None:
    """``rescorer task=evaluate`` on a bad set exits 2 with a file:line message, no traceback, no report."""
    bad = tmp_path / name
    bad.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    command = [str(CLI), "task=evaluate", "data=demo", f"out_dir={out}", f"data.sets.dev_other.nbest={bad}",
               f"data.sets.dev_other.fmt={fmt}", "data.sets.dev_other.refs=null", "~data.sets.test_clean"]
    result = subprocess.run(command, cwd=tmp_path, env={**os.environ, "HYDRA_FULL_ERROR": "0"},
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 2, result.stderr
    assert re.search(rf"/{re.escape(where)}(?!\d)", result.stderr), result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert not out.exists() or list(out.iterdir()) == []
    assert list(tmp_path.rglob("report.*")) == []


@pytest.mark.parametrize("data", [b"\xef\xbb\xbfa\r\nb\n\nc", b"a\n\n", b"\n \n\t\n", b"a\nb\xff\xfe\nc\n", b"",
                                  "x\u2028y\r\n\u0085z".encode()],
                         ids=["bom crlf no final newline", "blank last lines", "blank only", "bad utf-8 on line 2",
                              "empty", "unicode line breaks kept"])
def test_lines_read_one_at_a_time_are_those_of_the_whole_file_with_the_same_errors(data, tmp_path):
    from rescorer.errors import NBestFormatError
    from rescorer.io.common import iter_lines, read_lines

    path = tmp_path / "list.txt"
    path.write_bytes(data)
    try:
        whole = read_lines(path)
    except NBestFormatError as err:
        with pytest.raises(NBestFormatError) as streamed:
            list(iter_lines(path))
        problem = lambda e: str(e).split(": ")[1]  # path:line: PROBLEM: what was found  # noqa: E731
        assert (streamed.value.line, problem(streamed.value)) == (err.line, problem(err))
    else:
        assert [line for _, line in iter_lines(path)] == whole
        assert [number for number, _ in iter_lines(path)] == list(range(1, len(whole) + 1))
