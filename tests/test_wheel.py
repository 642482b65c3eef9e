"""The wheel works anywhere. It is built from a copy of the sources, installed with
``pip install --no-deps --target`` (this test environment provides the dependencies), and run from an empty
directory with the repository off the path: the configs and the demo excerpt come from inside the package."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jiwer
import pytest

import rescorer

from .conftest import DEMO, ROOT

pytestmark = pytest.mark.slow  # builds and installs the wheel

SOURCES = ("setup.py", "setup.cfg", "pyproject.toml", "MANIFEST.in", "README.md", "rescorer", "conf", "recipes/demo/data")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """``site``: the wheel installed into its own directory (nothing else there)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(tmp / "dist"), str(src)],
                   check=True, capture_output=True, text=True, timeout=300)
    wheels = list((tmp / "dist").glob("rescorer-*.whl"))
    assert len(wheels) == 1
    subprocess.run([*pip, "install", "--no-deps", "--no-index", "--target", str(tmp / "site"), str(wheels[0])],
                   check=True, capture_output=True, text=True, timeout=300)
    return tmp / "site"


def run(site: Path, cwd: Path, *args: str, command: list[str] | None = None) -> subprocess.CompletedProcess:
    """``python -m rescorer ARGS`` in ``cwd`` with only the installed wheel (and the dependencies) importable."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RESCORER_DATA")}
    env.update(PYTHONPATH=str(site), HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    return subprocess.run([*(command or [sys.executable, "-m", "rescorer"]), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def demo_baselines() -> dict[str, float]:
    sets = {name: rescorer.read_nbest(DEMO / name, refs=DEMO / name / "ref.trn") for name in ("dev_other", "test_clean")}
    return {name: 100 * jiwer.wer(n.refs(), [u.hyps[0].text for u in n]) for name, n in sets.items()}


def test_installed_wheel_runs_the_demo_from_any_directory(installed, tmp_path):
    where = run(installed, tmp_path, "-c", "import rescorer, rescorer.paths as p; print(rescorer.__file__, p.CONF, p.DEMO)",
                command=[sys.executable])
    package, conf, demo = where.stdout.split()
    assert Path(package).is_relative_to(installed) and Path(conf) == installed / "rescorer" / "conf", where.stdout
    assert Path(demo) == installed / "rescorer" / "demo" and not str(ROOT) in where.stdout

    evaluate = run(installed, tmp_path, "task=evaluate", "data=demo")
    assert evaluate.returncode == 0, evaluate.stderr
    report = json.loads((tmp_path / "exp" / "demo" / "evaluate" / "report.json").read_text())
    baselines = demo_baselines()
    for name, baseline in baselines.items():
        entry = report["sets"][name]
        assert entry["utterances"] == 300 and entry["hypotheses"] == 9000
        assert entry["baseline"]["wer"] == pytest.approx(baseline, abs=1e-9)
        assert Path(entry["path"]).is_relative_to(installed / "rescorer" / "demo")
    assert round(report["sets"]["dev_other"]["baseline"]["wer"], 2) == 4.60
    assert round(report["sets"]["test_clean"]["oracle"]["wer"], 2) == 0.47

    rescore = run(installed, tmp_path, "task=rescore", "data=demo", "scorer=[]", "task.bootstrap=100",
                  "task.columns={ctc: {range: [0, 1], step: 0.5}}")
    assert rescore.returncode == 0, rescore.stderr
    report = json.loads((tmp_path / "exp" / "demo" / "rescore" / "report.json").read_text())
    assert report["weights"] == {"ctc": 0.0} and report["search"]["settings"] == 3
    for name, baseline in baselines.items():
        entry = report["sets"][name]
        assert entry["baseline"]["wer"] == pytest.approx(baseline, abs=1e-9)
        assert entry["rescored"]["wer"] == pytest.approx(baseline, abs=1e-9)  # ctc weight 0: the ESPnet 1-best
        assert (tmp_path / "exp" / "demo" / "rescore" / name / "nbest" / "text").is_file()
    page = (tmp_path / "exp" / "demo" / "rescore" / "report.html").read_text(encoding="utf-8")
    assert '<table class="numbers">' in page and "<title>Rescoring report: demo</title>" in page  # templates shipped
    assert sorted(os.listdir(tmp_path)) == ["exp"]


def test_installed_wheel_answers_help_and_version(installed, tmp_path):
    script = [sys.executable, str(installed / "bin" / "rescorer")]  # the console script pip wrote
    version = run(installed, tmp_path, "--version", command=script)
    assert version.returncode == 0 and version.stdout.strip() == f"rescorer {rescorer.__version__}"
    usage = run(installed, tmp_path, "--help")
    assert usage.returncode == 0, usage.stderr
    lines = usage.stdout.splitlines()
    assert len(lines) <= 15
    assert any(line.split()[0] == "task=" and "rescore" in line.split() for line in lines)
    for group in ("data=", "scorer=", "model=", "engine=", "search=", "+experiment="):
        assert any(line.split() and line.split()[0] == group for line in lines), group
    assert str(installed) in lines[-1] and not os.listdir(tmp_path)
