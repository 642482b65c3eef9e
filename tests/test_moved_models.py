"""Where moved models are (``models=``, ``task.models``) is checked like every other option: a directory that is
not there, a file, or an entry naming nothing in the tuned file is one line, never silently ignored."""
from __future__ import annotations

import pytest

import rescorer
from rescorer.paths import DEMO

EXCERPT = {"every": 15, "top": 5}


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    out = tmp_path_factory.mktemp("tuned") / "run"
    rescorer.rescore(sets={"dev": {"nbest": str(DEMO / "dev_other"), "refs": str(DEMO / "dev_other" / "ref.trn"),
                                   **EXCERPT}}, columns={"ctc": {"range": [0, 1], "step": 0.5}}, out_dir=out,
                     bootstrap=1, retune=None)
    return out / "tuned.yaml"


@pytest.mark.parametrize("models, message", [
    ("/nonexistent/models", "models=/nonexistent/models: no such directory (models is a directory holding moved "
                            "models, or {column or model name: PATH})"),
    ({"lm": "/somewhere"}, "models.lm: the tuned file has no scorer column or model of that name (it has none)"),
])
def test_models_that_say_nothing_about_the_tuned_file_are_refused(tuned, tmp_path, models, message):
    listed = {"nbest": str(DEMO / "test_clean"), **EXCERPT}
    with pytest.raises(rescorer.ConfigError) as refused:
        rescorer.apply(listed, tuned, models=models, out_dir=tmp_path / "out")
    assert str(refused.value) == message
    assert not (tmp_path / "out").exists()


def test_models_that_are_a_file_are_refused(tuned, tmp_path):
    listed = {"nbest": str(DEMO / "test_clean"), **EXCERPT}
    with pytest.raises(rescorer.ConfigError, match="not a directory"):
        rescorer.apply(listed, tuned, models=tuned, out_dir=tmp_path / "out")
