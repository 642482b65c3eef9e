"""``rescorer task=adapt``: continue masked-LM training on a text corpus (resumable), then export the result."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..files import record_text
from ..io.refs import read_refs
from ..options import TRAINING, checked
from ..report.plots import curve_plot
from ..train.adapt import AdaptConfig, adapt
from ..train.export import export_delta
from . import task_options


def run(cfg: Any) -> dict[str, Any]:
    options = checked("task.", task_options(cfg), TRAINING)
    dev = options.pop("dev_refs", None)
    dev_size = options.pop("dev_size", 500)
    export = options.pop("export", None)
    dev_texts = [text for _, text, _ in read_refs(dev)[1]][:dev_size] if dev else []
    state = adapt(AdaptConfig(**options, dev_texts=dev_texts, out_dir=cfg.out_dir))
    out = Path(cfg.out_dir)
    curve_plot(state["curve"], out / "curve.png")
    (out / "curve.json").write_text(record_text(state["curve"], indent=1) + "\n")
    if export:
        export_delta(out / "best", export)
    best = next((c for c in state["curve"] if c["step"] == state["best_step"]), {})
    print(f"adapt: step {state['step']}, best step {state['best_step']}: dev word PPPL {best.get('dev_word_pppl')}, "
          f"token PPPL {best.get('dev_token_pppl')}")
    return state
