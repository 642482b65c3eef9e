"""A tuned rescorer as one directory that can be copied anywhere and applied with no other file: ``tuned.yaml``
and a copy of every model it needs that is not shipped (``task=bundle``)."""
from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..log import info
from ..safetext import visible
from ..report.write import report_json
from ..scorers.loading import model_files
from ..files import write_text
from ..shipped import shipped_name
from ..outdir import OutDir, open_out_dir, run_dir
from .portable import Models
from .file import FILE, Tuned


def bundle(tuned: str | Path, out_dir: str | Path | OutDir, models: Models = None) -> dict[str, Any]:
    """Write ``tuned`` (found, with its models, as :func:`rescorer.apply` finds them, and checked against their
    tuned content) into ``out_dir`` with a copy of each local model under ``models/<column>/``; shipped models
    and hub names are named, not copied. Returns what was copied (also ``out_dir/report.json``)."""
    source = Path(tuned)
    found = Tuned.load(source).located(source, models)
    found.check_models(source)
    local = {}
    for column, entry in found.scorers.items():
        model = (entry["spec"] or {}).get("model")
        if model and shipped_name(model) is None and model_files(str(model)) is not None:
            local[column] = Path(str(model))
        elif entry["spec"] is None:
            raise ConfigError(f"{source}: scorer {column} was an in-memory model: there is nothing to bundle")
    target = out_dir if isinstance(out_dir, OutDir) else open_out_dir(out_dir, [source, *local.values()])
    copied: dict[str, Any] = {}
    with run_dir(target) as out:
        scorers = dict(found.scorers)
        for column, model in local.items():
            into = out.path("models", column)
            into.mkdir(parents=True)
            files = model_files(str(model)) or []
            for file in files:
                shutil.copyfile(file, into / file.name)
            scorers[column] = {**scorers[column], "spec": {**scorers[column]["spec"], "model": f"./models/{column}"}}
            copied[column] = {"from": str(model), "to": f"./models/{column}", "files": len(files),
                              "bytes": sum(f.stat().st_size for f in files)}
        write_text(out.work / FILE, replace(found, scorers=scorers).to_yaml(out.final / FILE))
        report = {"task": "bundle", "tuned": str(source), "models": copied,
                  "named": {c: str(e["spec"]["model"]) for c, e in found.scorers.items() if c not in local}}
        write_text(out.work / "report.json", report_json(report))
    size = sum(entry["bytes"] for entry in copied.values())
    info(f"bundled {visible(source)} with {len(copied)} model(s) ({size / 1e6:.1f} MB) into {visible(target.path)}: "
         f"apply it anywhere with rescorer task=apply task.tuned={visible(target.path / FILE)}")
    return report
