"""Tune once on a labelled dev set, then apply the tuned rescorer (``tuned.yaml``) to lists without references:
the same files byte for byte, through the command line and the Python API, for ESPnet, fairseq and HyPoradise."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

import rescorer
from rescorer.errors import ConfigError
from rescorer.scorers.loading import local_fingerprint

from .conftest import DEMO, ROOT
from .test_cli import run_cli

FORMATS = ROOT / "tests" / "fixtures" / "formats"
EXCERPT = ("every=15", "top=5")  # 20 utterances × 5 hypotheses per demo set


def subset(name: str) -> list[str]:
    return [f"+data.sets.{name}.{option}" for option in EXCERPT]


def unlabelled_copy(source: Path, target: Path) -> Path:
    """An ESPnet decode dir without its references."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("ref.trn"))
    return target


@pytest.fixture(scope="module")
def tuned_demo(tmp_path_factory, tiny_models) -> dict[str, Path]:
    """The demo excerpt tuned with a tiny causal LM on a copy of the model (so a test may edit it)."""
    root = tmp_path_factory.mktemp("tuned")
    model = shutil.copytree(tiny_models["gpt2"], root / "model")
    result = run_cli("task=rescore", "data=demo", "scorer=[ll]", f"model.causal.path={model}", *subset("dev_other"),
                     *subset("test_clean"), "task.bootstrap=50", f"engine.store={root}/store.sqlite",
                     f"out_dir={root}/tune", cwd=root)
    assert result.returncode == 0, result.stderr
    return {"root": root, "model": model, "tune": root / "tune", "test": unlabelled_copy(DEMO / "test_clean", root / "new")}


def apply_cli(tuned: dict[str, Path], out: str, *extra: str):
    return run_cli("task=apply", f"task.tuned={tuned['tune'] / 'tuned.yaml'}", "data=own",
                   f"data.sets.test.nbest={tuned['test']}", *(f"data.sets.test.{o}" for o in EXCERPT),
                   f"engine.store={tuned['root']}/store.sqlite", f"out_dir={tuned['root'] / out}", *extra,
                   cwd=tuned["root"])


@pytest.mark.slow
def test_tuned_file_names_the_weights_and_the_scorer(tuned_demo):
    doc = yaml.safe_load((tuned_demo["tune"] / "tuned.yaml").read_text())
    report = json.loads((tuned_demo["tune"] / "report.json").read_text())
    assert doc["columns"]["ll"]["weight"] == report["weights"]["ll"]
    assert doc["base"]["name"] == "score" and doc["tuned_on"] == "dev_other"
    assert doc["scorers"]["ll"]["spec"]["model"] == str(tuned_demo["model"])
    assert doc["scorers"]["ll"]["signature"] == report["scorers"]["ll"]
    assert "device" not in doc["scorers"]["ll"]["spec"]


@pytest.mark.slow
def test_apply_to_an_unlabelled_copy_writes_what_rescore_wrote(tuned_demo):
    result = apply_cli(tuned_demo, "applied")
    assert result.returncode == 0, result.stderr
    applied, tuned = tuned_demo["root"] / "applied" / "test", tuned_demo["tune"] / "test_clean"
    for name in ("1best.txt", "text"):
        assert (applied / name).read_bytes() == (tuned / name).read_bytes(), name
    entry = json.loads((tuned_demo["root"] / "applied" / "report.json").read_text())["sets"]["test"]
    expected = json.loads((tuned_demo["tune"] / "report.json").read_text())["sets"]["test_clean"]["changed_1best"]
    assert entry["references"] is False and "rescored" not in entry
    assert entry["changed_1best"] == expected == sum(
        a != b for a, b in zip((tuned / "1best.txt").read_text().splitlines(),
                               (DEMO / "test_clean" / "1best_recog" / "text").read_text().splitlines()[::15]))


@pytest.mark.slow
def test_python_apply_writes_what_rescore_wrote(tuned_demo, tmp_path):
    new = {"nbest": str(tuned_demo["test"]), "every": 15, "top": 5}
    result = rescorer.apply(new, tuned_demo["tune"] / "tuned.yaml", out_dir=tmp_path / "out",
                            engine={"store": str(tuned_demo["root"] / "store.sqlite")})
    for name in ("1best.txt", "text"):
        assert (tmp_path / "out" / "test" / name).read_bytes() == (tuned_demo["tune"] / "test_clean" / name).read_bytes()
    assert result.weights == {"ll": yaml.safe_load((tuned_demo["tune"] / "tuned.yaml").read_text())["columns"]["ll"]["weight"]}


@pytest.mark.slow
def test_a_changed_model_is_refused_with_one_line(tuned_demo, tmp_path):
    tuned = {**tuned_demo, "tune": tmp_path / "tune"}
    shutil.copytree(tuned_demo["tune"], tuned["tune"])
    model = shutil.copytree(tuned_demo["model"], tmp_path / "model")
    (model / "config.json").write_text((model / "config.json").read_text().replace("{", '{"edited": true,', 1))
    doc = yaml.safe_load((tuned["tune"] / "tuned.yaml").read_text())
    doc["scorers"]["ll"]["spec"]["model"] = str(model)
    (tuned["tune"] / "tuned.yaml").write_text(yaml.safe_dump(doc))
    result = apply_cli(tuned, "refused")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("rescorer: error:") and "not the one these weights were tuned with" in lines[0]
    assert not (tuned_demo["root"] / "refused").exists()
    accepted = apply_cli(tuned, "accepted", "task.accept_changed_models=true")
    assert accepted.returncode == 0, accepted.stderr
    was, now = doc["scorers"]["ll"]["signature"].split("|")[1].removeprefix("model:"), local_fingerprint(str(model))
    said = [line for line in accepted.stderr.splitlines() if "not the one these weights were tuned with" in line]
    assert len(said) == 1 and said[0].startswith("rescorer: warning: ") and "scorer ll" in said[0], accepted.stderr
    assert f"model: {was} → {now}" in said[0] and "applied anyway" in said[0], said


def test_rescore_tunes_on_the_labelled_set_and_rescores_the_unlabelled_one(tmp_path):
    new = unlabelled_copy(DEMO / "test_clean", tmp_path / "new")
    result = run_cli("task=rescore", "data=own", f"data.sets.dev.nbest={DEMO / 'dev_other'}",
                     f"data.sets.dev.refs={DEMO / 'dev_other' / 'ref.trn'}", f"data.sets.test.nbest={new}",
                     *(f"data.sets.{s}.{o}" for s in ("dev", "test") for o in EXCERPT), "scorer=[]",
                     "task.columns={ctc: {range: [0, 1], step: 0.25}}", "task.bootstrap=50", f"out_dir={tmp_path}/out",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["tuned_on"] == "dev" and "rescored" in report["sets"]["dev"]
    assert report["sets"]["test"]["references"] is False and "rescored" not in report["sets"]["test"]
    for name in ("dev", "test"):
        assert len((tmp_path / "out" / name / "1best.txt").read_text().splitlines()) == 20


def test_a_set_without_references_cannot_be_tuned_on(tmp_path):
    new = rescorer.read_nbest(DEMO / "test_clean")
    with pytest.raises(ConfigError, match="no references to tune on"):
        rescorer.rescore(dev=new, columns={"ctc": {"range": [0, 1], "step": 0.5}})


def strip_lines(source: Path, target: Path, prefix: str) -> Path:
    target.write_text("".join(line for line in source.read_text().splitlines(True) if not line.startswith(prefix)))
    return target


def strip_outputs(source: Path, target: Path) -> Path:
    records = json.loads(source.read_text())
    target.write_text(json.dumps([{k: v for k, v in r.items() if k != "output"} for r in records]))
    return target


@pytest.mark.parametrize("fixture, unlabel, base, best", [
    ("fairseq/results/generate-test.txt", lambda s, t: strip_lines(s, t, "T-"), "score", "generate-1best.txt"),
    ("hyporadise/compact.json", strip_outputs, "am_score", "1best.txt"),
], ids=["fairseq", "hyporadise"])
def test_tune_then_apply_in_other_formats(fixture, unlabel, base, best, tiny_models, tmp_path):
    source = FORMATS / fixture
    scorers = {"ll": {"kind": "ll", "model": str(tiny_models["gpt2"]), "case": "lower"}}
    columns = {"ll": {"range": [0, 1], "step": 0.5}}
    tuned = rescorer.rescore(dev=source, scorers=scorers, base=base, columns=columns, bootstrap=20, out_dir=tmp_path / "tune")
    new = unlabel(source, tmp_path / source.name)
    assert not rescorer.read_nbest(new).has_refs
    applied = rescorer.apply(new, tmp_path / "tune" / "tuned.yaml", out_dir=tmp_path / "apply", name="dev")
    for name in ("1best.txt", best):  # the toolkit's file without its references (fairseq T lines)
        lines = [(tmp_path / run / "dev" / name).read_text().splitlines(True) for run in ("apply", "tune")]
        assert lines[0] == [line for line in lines[1] if not line.startswith("T-")], name
    assert [u.hyps[0].text for u in applied.nbests["dev"]] == [u.hyps[0].text for u in tuned.nbests["dev"]]
    assert applied.weights == tuned.weights


@pytest.mark.parametrize("content, says", [
    (None, "no such file"),
    ("base: [unclosed", "not a readable tuned.yaml"),
    ("just text\n", "not a tuned.yaml"),
    ("base: {name: score}\ncolumns: {ctc: {weight: high}}\nmetric: {name: wer}\nscorers: {}\n",
     "columns.ctc.weight must be a number"),
    ("base: {name: score}\ncolumns: {}\nmetric: {name: wre}\nscorers: {}\n", "unknown metric 'wre'"),
    ("base: {name: score}\ncolumns: {}\nmetric: {name: wer}\nscorers: {}\nweigths: {}\n", "unknown key"),
    ("base: {name: score}\ncolumns: {ctc: {weight: .nan}}\nmetric: {name: wer}\nscorers: {}\n",
     "columns.ctc.weight must be a number, not nan"),
    ("base: {name: score}\ncolumns: {ctc: {weight: 1.0e+400}}\nmetric: {name: wer}\nscorers: {}\n",
     "columns.ctc.weight must be a number, not inf"),
    ("base: {name: score}\ncolumns: {}\nmetric: {name: wer}\nscorers: {}\ndev: &a [1, *a]\n", "aliases"),
    ("base: {name: score}\ncolumns: {}\nmetric: {name: wer}\nscorers: {}\ndev: [1, 2]\n", "dev must be a mapping"),
    ("base: {name: score}\ncolumns: {}\nmetric: {name: wer}\nscorers: {ll: {spec: {kind: ll, model: m, device: "
     "'cuda:7'}, signature: 'll|model:m@x|rescorer:0.1.0'}}\n", "may not set device"),
    ("base: {name: score}\ncolumns: {}\nmetric: {name: wer}\nscorers: {ll: {spec: {kind: ll, model: m, "
     "trust_remote_code: true}, signature: 'll|model:m@x|rescorer:0.1.0'}}\n", "may not set trust_remote_code"),
], ids=["missing", "bad-yaml", "not-a-mapping", "weight-not-a-number", "misspelt-metric", "misspelt-key", "nan-weight",
        "overflowing-weight", "alias", "dev-a-list", "device", "trust-remote-code"])
def test_a_bad_tuned_file_is_one_line_naming_it(content, says, tmp_path):
    tuned = tmp_path / "tuned.yaml"
    if content is not None:
        tuned.write_text(content)
    result = run_cli("task=apply", f"task.tuned={tuned}", "data=own", f"data.sets.test.nbest={DEMO / 'test_clean'}",
                     f"out_dir={tmp_path}/out", cwd=tmp_path)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("rescorer: error: ") and str(tuned) in lines[0] and says in lines[0], lines[0]
    assert not (tmp_path / "out").exists()


def test_a_tuned_file_without_the_base_column_in_the_new_list_is_refused(tmp_path):
    tuned = tmp_path / "tuned.yaml"
    tuned.write_text("base: {name: am_score}\ncolumns: {}\nmetric: {name: wer}\nscorers: {}\n")
    with pytest.raises(ConfigError, match="has no score column 'am_score'"):
        rescorer.apply(DEMO / "test_clean", tuned)


def test_the_written_report_page_opens_in_a_browser_with_the_table_and_the_changes(tmp_path):
    from .test_html_report import BROWSER, chromium

    if BROWSER is None:
        pytest.skip("no chromium or chromium-browser binary on PATH (Debian: apt-get install chromium)")
    sets = {name: {"nbest": str(DEMO / name), "refs": str(DEMO / name / "ref.trn"), "every": 15, "top": 5}
            for name in ("dev_other", "test_clean")}
    result = rescorer.rescore(dev="dev_other", sets=sets, columns={"lm": {"range": [2, 2], "step": 1}}, bootstrap=50,
                              out_dir=tmp_path / "out")  # a fixed extra weight on ESPnet's LM: 1-bests change
    page = tmp_path / "out" / "report.html"
    dom = chromium(tmp_path, "--dump-dom", page.as_uri()).stdout
    root = re.search(r"<html[^>]*>", dom).group(0)
    assert 'data-ready="yes"' in root and "data-errors" not in root
    assert '<table class="numbers">' in dom and f"{result.report.sets['test_clean'].rescored['wer']:.2f}" in dom
    changed = [u.id for name, new in result.nbests.items()
               for u, old in zip(new, rescorer.io.sets.NBestSet(**sets[name]).read()) if u.hyps[0].text != old.hyps[0].text]
    assert changed and all(f'<span class="id">{utt}</span>' in dom for utt in changed)
    assert not re.search(r'(src|href)="https?://', page.read_text())


def test_a_scorer_loaded_from_a_path_object_is_written_to_the_tuned_file(tiny_models, tmp_path):
    scorer = rescorer.load_scorer("ll", Path(tiny_models["gpt2"]), store=str(tmp_path / "s.sqlite"), progress=False)
    dev = {"nbest": str(DEMO / "dev_other"), "refs": str(DEMO / "dev_other" / "ref.trn"), "every": 30, "top": 3}
    rescorer.rescore(dev=dev, scorers={"ll": scorer}, bootstrap=20, out_dir=tmp_path / "out")
    spec = yaml.safe_load((tmp_path / "out" / "tuned.yaml").read_text())["scorers"]["ll"]["spec"]
    assert spec["model"] == str(tiny_models["gpt2"])
