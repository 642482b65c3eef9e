"""``engine.threads``: how many torch threads a run uses, and applying that to the whole process.

The default is ``$OMP_NUM_THREADS`` when the user set it, else the physical cores this process may run on: the
CPUs of its affinity mask (``taskset``, a cpuset), counted once per core (hyper-threads share one), and no more
than a cgroup CPU quota allows (``docker --cpus``, Kubernetes limits; cgroup v2 ``cpu.max`` or v1
``cpu.cfs_quota_us``). torch's own default counts every core of the machine, which oversubscribes a container.
"""
from __future__ import annotations

import contextlib
import math
import os
import sys
from pathlib import Path
from typing import Iterator

SYS_CPU = Path("/sys/devices/system/cpu")
CGROUP = Path("/sys/fs/cgroup")
_TASK: list[int] = []  # the thread count of the task run in progress, if one is


def affinity() -> list[int]:
    """The CPUs this process may run on."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return list(range(os.cpu_count() or 1))


def physical_cores(cpus: list[int], sys_cpu: Path = SYS_CPU) -> int:
    """How many distinct physical cores ``cpus`` belong to (each CPU its own core where sysfs does not say)."""
    cores = set()
    for cpu in cpus:
        topology = sys_cpu / f"cpu{cpu}" / "topology"
        try:
            cores.add((topology.joinpath("physical_package_id").read_text().strip(),
                       topology.joinpath("core_id").read_text().strip()))
        except OSError:
            cores.add(("cpu", str(cpu)))
    return max(1, len(cores))


def cgroup_quota(cgroup: Path = CGROUP, proc_cgroup: Path = Path("/proc/self/cgroup")) -> int | None:
    """The CPUs a cgroup quota allows (rounded up), or None without a quota."""
    own = ""
    try:  # cgroup v2: the process's own group ("0::/path"), else the mount's root
        own = next((line.split("::", 1)[1].strip() for line in proc_cgroup.read_text().splitlines()
                    if line.startswith("0::")), "")
    except OSError:
        pass
    for place in dict.fromkeys([cgroup / own.lstrip("/"), cgroup]):
        try:
            quota, period = (place / "cpu.max").read_text().split()[:2]
        except (OSError, ValueError):
            continue
        if quota != "max":
            return max(1, math.ceil(int(quota) / int(period)))
    try:  # cgroup v1
        quota = int((cgroup / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((cgroup / "cpu" / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return max(1, math.ceil(quota / period)) if quota > 0 and period > 0 else None


def available_cores() -> int:
    """Physical cores of the affinity mask, capped by the cgroup quota."""
    cores = physical_cores(affinity())
    quota = cgroup_quota()
    return min(cores, quota) if quota else cores


def default_threads() -> int:
    """``$OMP_NUM_THREADS`` when set to a positive integer, else :func:`available_cores`."""
    given = os.environ.get("OMP_NUM_THREADS", "").strip()
    return int(given) if given.isdigit() and int(given) > 0 else available_cores()


def apply_threads(threads: int | None) -> int:
    """Make ``threads`` (None: :func:`default_threads`) the process's torch thread count, and return it. When
    torch is not imported yet, ``OMP_NUM_THREADS`` tells it at import (a task that never needs torch never pays
    for importing it)."""
    threads = threads or default_threads()
    if "torch" in sys.modules:
        import torch

        torch.set_num_threads(threads)
    else:
        os.environ["OMP_NUM_THREADS"] = str(threads)
    return threads


@contextlib.contextmanager
def task_threads(threads: int | None) -> Iterator[int]:
    """Apply ``threads`` once for a whole task run (training included): engines built during it keep that count
    unless their own settings name another."""
    _TASK.append(apply_threads(threads))
    try:
        yield _TASK[-1]
    finally:
        _TASK.pop()


def engine_threads(threads: int | None) -> int:
    """An engine's torch threads: during a task run, the run's count unless ``threads`` names another; elsewhere
    ``threads`` (None: :func:`default_threads`) applied now."""
    if _TASK and threads in (None, _TASK[-1]):
        return _TASK[-1]
    return apply_threads(threads)
