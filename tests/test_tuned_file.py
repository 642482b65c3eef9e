"""A tuned.yaml is data that people share: it says which model and which scoring options, never anything that runs
code or decides where and how the applying run computes; every part of it is checked before a model is loaded."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

import rescorer
from rescorer.errors import ConfigError
from rescorer.metrics import make_metric
from rescorer.tuned import Tuned
from rescorer.scorers.loading import local_fingerprint

from .conftest import DEMO
from .test_cli import run_cli
from .test_hostile_io import one_line

SIGNATURE = "ll|model:{model}@{tag}|bos:auto|eos:True|dtype:float32|case:keep|period:no|rescorer:0.1.0"


def tuned_file(path: Path, spec: dict, signature: str | None = None, weight: object = 0.5, **top: object) -> Path:
    model = spec.get("model", "m")
    doc = {"base": {"name": "score", "penalty": "none"}, "columns": {"ll": {"weight": weight, "penalty": "none"}},
           "metric": {"name": "wer"},
           "scorers": {"ll": {"spec": spec, "signature": signature or SIGNATURE.format(model=model, tag="0" * 12)}},
           **top}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def evil_model(source: Path, target: Path) -> tuple[Path, Path]:
    """A copy of a real model whose tokenizer config maps AutoTokenizer to Python code beside it that, if it were
    ever imported, would write a marker file."""
    model = shutil.copytree(source, target)
    marker = target.parent / "marker"
    (model / "evil.py").write_text(f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
                                   "from transformers import PreTrainedTokenizerFast as EvilTokenizer\n")
    config = json.loads((model / "tokenizer_config.json").read_text())
    config["auto_map"] = {"AutoTokenizer": ["evil.EvilTokenizer", "evil.EvilTokenizer"]}
    (model / "tokenizer_config.json").write_text(json.dumps(config))
    return model, marker


def digests(*paths: Path) -> dict[str, str]:
    return {str(f): hashlib.sha256(f.read_bytes()).hexdigest() for p in paths
            for f in ([p] if p.is_file() else sorted(p.rglob("*"))) if f.is_file()}


@pytest.mark.parametrize("spec, says", [
    ({"trust_remote_code": True}, "may not set trust_remote_code (a tuned file never runs code)"),
    ({"device": "cuda:7"}, "may not set device (where and how a run computes is the applying run's choice"),
    ({"threads": 0}, "may not set threads"),
    ({"dtype": "fp16"}, "may not set dtype"),
    ({"compile": True}, "may not set compile"),
    ({"budget": 1}, "may not set budget"),
    ({"store": "/tmp/elsewhere.sqlite"}, "may not set store"),
    ({"bogus": 1}, "unknown scorers.ll.spec key 'bogus'"),
    ({"kind": "student", "bogus": 1}, "unknown scorers.ll.spec key 'bogus'"),
    ({"kind": "bert"}, "unknown scorers.ll.spec.kind 'bert'"),
    ({"variant": ["a"]}, "unknown scorers.ll.spec key 'variant'"),
    ({"bos": ["auto"]}, "scorers.ll.spec.bos must be a plain value"),
    ({"model": 3}, "scorers.ll.spec.model must be a string"),
    ({"context": {"utterances": 2, "source": "reference"}},
     "scorers.ll.spec.context.source: a tuned rescorer never reads the references as context"),
], ids=["trust_remote_code", "device", "threads", "dtype", "compile", "budget", "store", "unknown-key",
        "student-unknown-key", "unknown-kind", "option-of-another-kind", "not-plain", "model-not-text",
        "reference-context"])
def test_a_tuned_file_may_name_a_model_and_its_scoring_options_and_nothing_else(spec, says, tmp_path):
    path = tuned_file(tmp_path / "tuned.yaml", {"kind": "ll", "model": str(tmp_path / "m"), **spec})
    with pytest.raises(ConfigError, match=None) as caught:
        Tuned.load(path)
    assert str(caught.value).startswith(f"{path}: ") and says in str(caught.value), str(caught.value)


@pytest.mark.parametrize("change, says", [
    ({"weight": float("nan")}, "columns.ll.weight must be a number, not nan"),
    ({"weight": float("inf")}, "columns.ll.weight must be a number, not inf"),
    ({"dev": [1, 2]}, "dev must be a mapping"),
    ({"dev": "abc"}, "dev must be a mapping"),
    ({"dev": {"wer": "low"}}, "dev.wer must be a number"),
    ({"search": 3}, "search must be a string"),
    ({"base": {"name": 5, "penalty": "none"}}, "base.name must be a string, not 5"),
    ({"signature": "ll|model:m@000000000000|bos:au"}, "is not a whole ll signature (cut short or edited?)"),
    ({"signature": "pll|model:m@000000000000|rescorer:0.1.0"}, "is not a whole ll signature"),
], ids=["nan-weight", "inf-weight", "dev-list", "dev-text", "dev-value", "search-number", "base-name-number",
        "signature-cut",
        "signature-of-another-kind"])
def test_a_tuned_file_of_the_wrong_types_or_with_non_finite_weights_is_one_line(change, says, tmp_path):
    path = tuned_file(tmp_path / "tuned.yaml", {"kind": "ll", "model": "m"}, **change)
    with pytest.raises(ConfigError) as caught:
        Tuned.load(path)
    assert str(caught.value).startswith(f"{path}: ") and says in str(caught.value), str(caught.value)


def test_weights_that_are_not_finite_are_refused_in_the_api_too():
    from rescorer.combine import Column

    for weight in (float("nan"), float("-inf"), "0.5"):
        with pytest.raises(ConfigError, match="weight of ll must be a finite number"):
            Tuned(Column("score"), (Column("ll"),), {"ll": weight}, make_metric("wer"), {})


def test_a_yaml_1e400_weight_is_infinite_and_refused(tmp_path):
    path = tmp_path / "tuned.yaml"
    path.write_text("base: {name: score}\ncolumns: {ll: {weight: 1.0e+400}}\nmetric: {name: wer}\nscorers: {}\n")
    with pytest.raises(ConfigError, match="columns.ll.weight must be a number, not inf"):
        Tuned.load(path)


def test_nested_yaml_aliases_are_refused_before_they_expand(tmp_path):
    laughs = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    laughs += [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]" for i in range(8)]
    path = tmp_path / "tuned.yaml"
    path.write_text("base: {name: score}\ncolumns: {}\nmetric: {name: wer}\nscorers: {}\ndev:\n  "
                    + "\n  ".join(laughs) + "\n")
    assert path.stat().st_size < 2000  # ~10^9 nodes once expanded
    with pytest.raises(ConfigError, match=r"aliases \(\*a\) are not allowed"):
        Tuned.load(path)


@pytest.mark.parametrize("twice, line", [("columns", 4), ("weight", 4)])
def test_a_key_given_twice_is_refused_naming_the_file_line_and_key(twice, line, tmp_path):
    path = tmp_path / "tuned.yaml"
    body = {"columns": "base: {name: score}\ncolumns: {ll: {weight: 1}}\nmetric: {name: wer}\ncolumns: {}\n",
            "weight": "base: {name: score}\nmetric: {name: wer}\ncolumns: {ll: {weight: 1,\n weight: 2}}\n"}[twice]
    path.write_text(body + "scorers: {}\n")
    with pytest.raises(ConfigError) as caught:
        Tuned.load(path)
    assert str(caught.value) == f"{path}:{line}: key {twice!r} is given twice (each key is given once)"


def test_a_symlink_loop_as_the_tuned_file_or_among_moved_models_is_named_as_a_loop(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(rescorer.RescorerError) as caught:
        Tuned.load(tmp_path / "a")
    assert str(caught.value) == f"{tmp_path / 'a'}: not a readable tuned.yaml (symbolic link loop)"
    models = tmp_path / "models"
    models.mkdir()
    (models / "m").symlink_to(models / "m")
    path = tuned_file(tmp_path / "tuned.yaml", {"kind": "ll", "model": str(tmp_path / "gone" / "m")})
    for given in (models, tmp_path / "a"):
        with pytest.raises(rescorer.RescorerError) as caught:
            Tuned.load(path).located(path, given)
        looped = models / "m" if given == models else given
        assert str(caught.value) == f"{looped}: symbolic link loop"


@pytest.mark.parametrize("kind", ["fifo", "device", "directory", "huge"])
def test_a_tuned_path_that_is_not_a_small_regular_file_is_one_line_and_never_blocks(kind, tmp_path):
    path = {"fifo": tmp_path / "pipe", "device": Path("/dev/zero"), "directory": tmp_path,
            "huge": tmp_path / "tuned.yaml"}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    if kind == "huge":
        path.write_text("# " + "x" * (2 << 20) + "\n")
    huge = f"not a readable tuned.yaml ({(2 << 20) + 3:,} bytes, more than the {1 << 20:,} it may hold)"
    says = {"fifo": "not a regular file but a pipe", "device": "not a regular file but a device",
            "directory": "expected a file, found a directory", "huge": huge}[kind]
    with pytest.raises(ConfigError, match=None) as caught:
        Tuned.load(path)  # a FIFO without a writer would block forever if it were opened
    assert str(caught.value).startswith(str(path)) and says in str(caught.value), str(caught.value)


@pytest.mark.slow
def test_no_code_from_a_model_directory_runs_whatever_the_tuned_file_says(tiny_causal, tmp_path):
    model, marker = evil_model(tiny_causal, tmp_path / "evil")
    inputs = digests(model, DEMO / "test_clean")
    tuned = rescorer.load_scorer("ll", str(model), store=None, progress=False).signature  # loading runs no code
    assert not marker.exists() and local_fingerprint(str(model)) in tuned
    cases = {
        "asks for remote code": ({"kind": "ll", "model": str(model), "trust_remote_code": True}, tuned,
                                 "may not set trust_remote_code"),
        "files changed since tuning": ({"kind": "ll", "model": str(model)},
                                       tuned.replace(local_fingerprint(str(model)), "0" * 12),
                                       "not the one these weights were tuned with"),
    }
    for name, (spec, signature, says) in cases.items():
        path = tuned_file(tmp_path / f"{name}.yaml", spec, signature)
        result = run_cli("task=apply", f"task.tuned={path}", "data=own", f"data.sets.test.nbest={DEMO / 'test_clean'}",
                         "data.sets.test.every=30", f"out_dir={tmp_path / 'out'}", cwd=tmp_path)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, (name, result.stderr)
        assert lines[0].startswith("rescorer: error: ") and says in lines[0], (name, lines[0])
        assert not marker.exists() and not (tmp_path / "out").exists(), name
    path = tuned_file(tmp_path / "same files.yaml", {"kind": "ll", "model": str(model)}, tuned)
    applied = rescorer.apply({"nbest": str(DEMO / "test_clean"), "every": 30}, path)  # the code beside it never runs
    assert len(applied.nbests["test"]) == 10
    assert not marker.exists() and digests(model, DEMO / "test_clean") == inputs


class RunsCode:
    """What a pickle holds to run code as it is read: ``exec(code)``."""

    def __init__(self, code: str):
        self.code = code

    def __reduce__(self):
        return exec, (self.code,)


def pickled_model(source: Path, target: Path) -> tuple[Path, Path]:
    """A copy of a real model whose weights are a ``pytorch_model.bin`` that, if it were ever unpickled, would write
    a marker file; no safetensors."""
    import pickle

    model = shutil.copytree(source, target)
    marker = target.parent / "marker"
    (model / "model.safetensors").unlink()
    (model / "pytorch_model.bin").write_bytes(pickle.dumps(RunsCode(f"open({str(marker)!r}, 'w').write('ran')")))
    return model, marker


def test_a_model_whose_weights_are_a_pickle_is_refused_unread_on_the_command_line_and_in_the_api(tiny_causal,
                                                                                                tmp_path):
    model, marker = pickled_model(tiny_causal, tmp_path / "moved" / "pickled")
    signature = SIGNATURE.format(model=tmp_path / "pickled", tag=local_fingerprint(str(model)))
    path = tuned_file(tmp_path / "tuned.yaml", {"kind": "ll", "model": str(tmp_path / "pickled")}, signature)
    inputs = digests(model, path)
    says = f"only safetensors weights are loaded, and {model} holds none: pytorch_model.bin is a pickle"
    result = run_cli("task=apply", f"task.tuned={path}", f"task.models={model.parent}", "data=own",
                     f"data.sets.test.nbest={DEMO / 'test_clean'}", f"out_dir={tmp_path / 'out'}", cwd=tmp_path)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("rescorer: error: ") and says in lines[0], lines[0]
    with pytest.raises(rescorer.ScorerError, match="only safetensors weights are loaded"):
        rescorer.apply({"nbest": str(DEMO / "test_clean"), "every": 30}, path, models=model.parent)
    assert not marker.exists() and not (tmp_path / "out").exists() and digests(model, path) == inputs


@pytest.mark.parametrize("value, says", [('"\\udc00"', "a lone surrogate escape \\udc00 is not valid Unicode"),
                                         ("{a: " * 1000 + "1" + "}" * 1000, "nested too deep (over 100 levels)")],
                         ids=["lone surrogate", "nested too deep"])
def test_a_tuned_file_no_loader_can_hold_is_one_error_of_the_api_naming_its_line(value, says, tmp_path):
    path = tmp_path / "tuned.yaml"
    path.write_text(f"base: {{name: score}}\ncolumns: {{}}\nmetric: {{name: wer}}\nscorers:\n  ll: {value}\n")
    with pytest.raises(ConfigError) as caught:
        rescorer.apply({"nbest": str(DEMO / "test_clean"), "every": 50}, path)
    message = one_line(caught.value)
    assert message.startswith(f"{path}: not a readable tuned.yaml (") and says in message and "line 5" in message
