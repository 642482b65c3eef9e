"""``engine.threads`` is the torch thread count inside a scoring run, set by every task; its default is
``$OMP_NUM_THREADS`` when set, else the physical cores the process may use (affinity mask, cgroup quota)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir

import rescorer
from rescorer.engine import EngineSettings, cores
from rescorer.scorers.causal import CausalLMScorer
from rescorer.tasks import CONF, register_resolvers, run_task



@pytest.fixture(autouse=True)
def restore_threads(monkeypatch):
    """Tests change the process's torch threads and ``OMP_NUM_THREADS``: put both back."""
    before = torch.get_num_threads()
    monkeypatch.setenv("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", "1"))
    yield
    torch.set_num_threads(before)


@pytest.fixture
def threads_seen(monkeypatch) -> list[int]:
    """``torch.get_num_threads()`` inside every causal-LM forward pass."""
    seen: list[int] = []
    forward = CausalLMScorer.forward

    def recording(self, *batch):
        seen.append(torch.get_num_threads())
        return forward(self, *batch)

    monkeypatch.setattr(CausalLMScorer, "forward", recording)
    return seen


@pytest.mark.parametrize("threads", [1, 2])
def test_engine_threads_is_the_thread_count_inside_scoring(threads, tiny_causal, threads_seen):
    torch.set_num_threads(3 - threads)  # start from the other value
    scorer = rescorer.load_scorer("ll", str(tiny_causal), threads=threads, store=None, progress=False)
    scorer.score(["A CAT SAT", "ON THE MAT"])
    assert threads_seen and set(threads_seen) == {threads}


def test_default_is_omp_num_threads_else_the_available_cores(monkeypatch, tiny_causal, threads_seen):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    torch.set_num_threads(2)
    rescorer.load_scorer("ll", str(tiny_causal), store=None, progress=False).score(["A CAT SAT"])
    assert set(threads_seen) == {1}
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert cores.default_threads() == cores.available_cores()
    assert 1 <= cores.available_cores() <= len(os.sched_getaffinity(0))
    threads_seen.clear()
    rescorer.load_scorer("ll", str(tiny_causal), store=None, progress=False).score(["ON THE MAT"])
    assert set(threads_seen) == {cores.available_cores()}


def compose_config(*overrides: str):
    register_resolvers()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


@pytest.mark.parametrize("threads", [1, pytest.param(2, marks=pytest.mark.slow)])  # 2: 5–20 s on a busy machine
def test_every_task_runs_with_engine_threads(threads, tmp_path, tiny_causal, threads_seen, monkeypatch):
    """``task=score`` scores with that many threads; any task (here evaluate, which loads no model) starts with them."""
    small = ["++data.sets.dev_other.every=50", "++data.sets.test_clean.every=50", "engine.progress=false",
             f"engine.store={tmp_path}/s.sqlite", f"engine.threads={threads}"]
    torch.set_num_threads(3 - threads)
    run_task(compose_config("task=score", "scorer=[ll]", f"model.causal.path={tiny_causal}",
                            f"out_dir={tmp_path}/score", *small))
    assert threads_seen and set(threads_seen) == {threads}

    import rescorer.tasks.evaluate as evaluate

    at_start = []
    monkeypatch.setattr(evaluate, "run", lambda cfg: at_start.append(torch.get_num_threads()))
    torch.set_num_threads(3 - threads)
    run_task(compose_config("task=evaluate", f"out_dir={tmp_path}/evaluate", *small))
    assert at_start == [threads]


def test_a_task_run_applies_its_threads_once_and_its_engines_keep_them(monkeypatch):
    applied: list[int | None] = []
    monkeypatch.setattr(cores, "apply_threads", lambda threads: applied.append(threads) or threads or 1)
    with cores.task_threads(2):
        EngineSettings.of({}).engine()
        EngineSettings.of({"threads": 2}).engine()
        assert applied == [2]
        EngineSettings.of({"threads": 3}).engine()  # a count of its own (task=bench's task.threads)
    assert applied == [2, 3]
    EngineSettings.of({}).engine()  # outside a task run: every engine applies its own
    assert applied == [2, 3, None]


def test_threads_reach_torch_imported_later(tmp_path):
    """Before torch is imported, the count goes through ``OMP_NUM_THREADS`` (a task without torch never imports it)."""
    code = ("import sys; from rescorer.engine.cores import apply_threads; apply_threads(2); "
            "assert 'torch' not in sys.modules; import torch; print(torch.get_num_threads())")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(rescorer.__file__).parents[1])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "2", out.stderr


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_physical_cores_count_hyperthreads_once_and_cgroup_quotas_cap(tmp_path):
    sys_cpu = tmp_path / "cpu"
    for cpu, (package, core) in enumerate([(0, 0), (0, 0), (0, 1), (0, 1), (1, 0)]):  # 2 SMT pairs + 1 core
        write(sys_cpu / f"cpu{cpu}" / "topology" / "physical_package_id", f"{package}\n")
        write(sys_cpu / f"cpu{cpu}" / "topology" / "core_id", f"{core}\n")
    assert cores.physical_cores([0, 1, 2, 3, 4], sys_cpu) == 3
    assert cores.physical_cores([0, 1], sys_cpu) == 1
    assert cores.physical_cores([7, 8], sys_cpu) == 2  # sysfs silent: one core per CPU

    proc = write(tmp_path / "proc_cgroup", "0::/job.slice/run\n")
    v2 = tmp_path / "v2"
    write(v2 / "job.slice" / "run" / "cpu.max", "150000 100000\n")  # docker --cpus=1.5
    assert cores.cgroup_quota(v2, proc) == 2
    write(v2 / "job.slice" / "run" / "cpu.max", "max 100000\n")
    assert cores.cgroup_quota(v2, proc) is None
    v1 = tmp_path / "v1"
    write(v1 / "cpu" / "cpu.cfs_quota_us", "100000\n")
    write(v1 / "cpu" / "cpu.cfs_period_us", "100000\n")
    assert cores.cgroup_quota(v1, tmp_path / "none") == 1
    write(v1 / "cpu" / "cpu.cfs_quota_us", "-1\n")
    assert cores.cgroup_quota(v1, tmp_path / "none") is None
