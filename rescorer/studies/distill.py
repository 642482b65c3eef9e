"""Distillation, the study ``rescorer task=distill`` runs: train a maskless student on a teacher (a masked LM's PLL or
a causal LM's log-likelihood; resumable),
then compare the two on every hypothesis of the given N-best sets (held out from training): Pearson r, mean absolute
error, a scatter plot."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..files import record_text
from ..log import info
from ..engine import load_scorer
from ..errors import ConfigError
from ..context import split
from ..io.sets import NBestSet
from ..normalise import Normaliser
from ..options import TRAINING, checked
from ..outdir import TRAINED, open_out_dir
from ..report.plots import distill_plot, scatter_plot
from ..report import write_report
from ..train.corpus import load_segments
from ..types import NBest
from ..train.distill import DistillConfig, distill, training_inputs
from ..train.export import export_student
from ..train.mwer import MWERConfig, mwer_distill, nbest_lists

OPTIONS = ("init", "level", "epochs", "batch_size", "lr", "eval_every", "patience", "dev_fraction", "max_length",
           "list_weight", "max_seconds", "device", "seed")


def training_texts(task: dict[str, Any]) -> tuple[list[str], list[NBest]]:
    """Segments of the plain-text files (at most ``max_texts``) and the listed N-best sets, whose hypotheses are
    training texts too (their references never read)."""
    texts = load_segments(task["texts"], seed=task["seed"])[: task["max_texts"]] if task["texts"] else []
    return texts, [NBestSet(**{**spec, "refs": None}, where=f"task.hypotheses.{name}.").read()
                   for name, spec in task["hypotheses"].items()]


def read_paths(task: dict[str, Any], heldout: Mapping[str, NBestSet]) -> list[str]:
    """The files the study reads that exist: the teacher's and the starting model, the texts, the N-best sets."""
    sets = [*task["hypotheses"].values(), *task["lists"].values(), *(vars(s) for s in heldout.values())]
    paths = [task["teacher"].get("model"), task.get("init"), *(task["texts"] or []),
             *(spec.get(key) for spec in sets for key in ("nbest", "refs"))]
    return [str(path) for path in paths if isinstance(path, (str, Path)) and os.path.lexists(path)]


def heldout(teacher_options: Mapping[str, Any], engine: Mapping[str, Any], student_dir: Path,
            sets: Mapping[str, NBestSet], trained: tuple[list[str], list[NBest]], out: Path) -> dict:
    """Student against teacher on every distinct hypothesis of each set (after its context, where they read one)
    not among the ``trained`` texts; the correlation of the teacher's score with the token count alone is the
    baseline a student must beat."""
    teacher = load_scorer(**{**engine, **teacher_options})
    student = load_scorer("student", str(student_dir), **engine, case=teacher_options.get("case", "keep"),
                          append_period=teacher_options.get("append_period", False))
    seen = set(training_inputs(*trained, teacher))
    results = {}
    for name, spec in sets.items():
        texts = [t for t in dict.fromkeys(training_inputs([], [spec.read()], teacher))
                 if split(t)[1] and t not in seen]
        scored = teacher.compute(texts, normalise=False)
        x, y = np.array(scored.totals), np.array(student.compute(texts, normalise=False).totals)
        length = np.array([len(tokens) for tokens in scored.tokens])
        results[name] = {"texts": len(texts), "pearson": float(np.corrcoef(x, y)[0, 1]),
                         "mae": float(np.abs(x - y).mean()), "teacher_mean": float(x.mean()),
                         "length_pearson": float(np.corrcoef(x, length)[0, 1]),
                         "plot": str(scatter_plot(x, y, out / f"heldout_{name}.png", "teacher score", "student score",
                                                  name))}
    return results


def mwer_options(task: dict[str, Any], teacher: dict[str, Any]) -> MWERConfig:
    """The MWER objective's lists (``task.lists``: N-best sets with references) and settings."""
    if task["objective"] != "mwer":
        raise ConfigError(f"task.objective must be mse or mwer, not {task['objective']!r}")
    if not task["lists"]:
        raise ConfigError("task.objective=mwer needs task.lists: N-best sets with references to train on")
    normaliser = Normaliser(teacher.get("case", "keep"), teacher.get("append_period", False))
    lists = nbest_lists([NBestSet(**spec, where=f"task.lists.{name}.").read() for name, spec in task["lists"].items()],
                        task["base"], normaliser)
    return MWERConfig(lists, **{k: task["mwer"][k] for k in ("beta", "scale", "scale_lr", "lists_per_step",
                                                            "held_fraction")})


def distill_student(task: dict[str, Any], out_dir: str | Path, engine: Mapping[str, Any], data: str,
                    sets: Mapping[str, NBestSet]) -> dict[str, Any]:
    """The whole study on plain options (what ``conf/task/distill.yaml`` holds) and ``engine.*`` settings; with
    ``task["heldout"]``, student and teacher are compared on ``sets`` (of the data set named ``data``)."""
    checked("task.", task, TRAINING)
    teacher = task["teacher"]
    out = open_out_dir(out_dir, read_paths(task, sets), TRAINED).path
    texts, nbests = training_texts(task)
    config = DistillConfig(teacher=teacher, texts=texts, nbests=nbests, out_dir=str(out), progress=engine["progress"],
                           engine=dict(engine), **{k: task[k] for k in OPTIONS})
    result = distill(config) if task["objective"] == "mse" else mwer_distill(config, mwer_options(task, teacher))
    distill_plot(result["curve"], out / "curve.png")
    best = next(c for c in result["curve"] if c["step"] == result["best_step"])
    report = {"task": "distill", "data": data, "signature": result["teacher"],
              "student": result["student"], "train_texts": result["train_texts"], "dev_texts": result["dev_texts"],
              "best_step": result["best_step"], "best": best, "curve": result["curve"], "sets": {}}
    within = (f", within lists r {best['dev_list_pearson']:.4f}, MSE {best['dev_list_mse']:.4f}"
              if np.isfinite(best.get("dev_list_pearson", np.nan)) else "")
    info(f"distill: best step {result['best_step']}: dev MSE {best['dev_mse']:.4f}, "
         f"Pearson r {best['dev_pearson']:.4f}, MAE {best['dev_mae']:.3f}{within}")
    if task["heldout"]:
        report["sets"] = heldout(teacher, engine, out / "student", sets, (texts, nbests), out)
    if task["export"]:
        try:
            report["export"] = export_student(out / "student", task["init"] or teacher["model"], task["export"])
        except OSError as err:
            raise ConfigError(f"task.export={task['export']}: {err.strerror or err}; the trained student is in "
                              f"{out / 'student'} (rerun to export it)") from err
        info(f"distill: shipped form in {task['export']}: {report['export']['bytes'] / 1e6:.1f} MB, "
              f"largest weight error {report['export']['max_weight_error']:.1e}")
    write_report(out, report, ["texts", "pearson", "length_pearson", "mae", "teacher_mean"], "student vs teacher score (held out)")
    (out / "curve.json").write_text(record_text(result["curve"], indent=1) + "\n")
    return report
