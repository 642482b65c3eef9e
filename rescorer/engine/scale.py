"""Scoring beyond one process: a pool of Ray actors (``engine=ray``) or one process per GPU (``engine=multi_gpu``).

The driver keeps the score store (one writer): it sends out only the texts the store lacks and stores what the
workers send back as it arrives, so a killed driver resumes where it stopped. Each worker rebuilds the scorer
from its ``spec`` (the arguments of :func:`rescorer.scorers.load_adapter`) and runs the local engine's batching
on its share; a sentence never leaves its worker, so its rows are never split.
"""
from __future__ import annotations

import hashlib
import logging
import queue
import signal
import threading
import traceback
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from ..files import record_text
from ..errors import ConfigError, ScorerError, check_known
from ..log import info
from .local import EngineStats, ScoreMap, compute
from .progress import Meter

if TYPE_CHECKING:
    from ..scorers.base import Scorer

BACKENDS = ("ray", "processes")
RETRIES = 2  # restarts of a lost Ray actor, and retries of the block it was scoring


@dataclass
class ScaleConfig:
    """Where the workers run. ``workers`` None: one per GPU (Ray: per ``gpus_per_worker``), or on a machine
    without GPUs one per ``cpus_per_worker`` CPUs (Ray) — ``processes`` needs it set there."""

    backend: str = "ray"
    workers: int | None = None
    cpus_per_worker: int = 1              # CPUs reserved per worker (torch threads of a CPU worker)
    gpus_per_worker: float | None = None  # Ray: None = 1 on a cluster with GPUs, else 0
    block: int = 256                      # texts per Ray block: the unit a worker scores and the driver stores
    address: str | None = None            # Ray: None starts a local cluster; "auto" or "ray://head:10001" joins one
    init: dict = field(default_factory=dict)  # more ray.init arguments (runtime_env, namespace, num_cpus, ...)

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> "ScaleConfig":
        """From ``engine.scale``; an unknown key is an error naming the known ones."""
        check_known("engine.scale key", options, (f.name for f in fields(cls)))
        return cls(**options)

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ConfigError(f"engine.scale.backend must be one of {', '.join(BACKENDS)}, not {self.backend!r}")


def shard_of(text: str, shards: int) -> int:
    """A stable shard for ``text`` (the same on every run and machine, unlike ``hash``)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") % shards


class Worker:
    """A scorer rebuilt from its spec inside a worker (a Ray actor or a spawned process); its model must be the
    bytes the driver loaded (``tag``, what the driver's signature calls it), or no score of it reaches the store."""

    def __init__(self, spec: dict[str, Any], device: str, threads: int, budget: int | None, tag: str | None):
        import torch

        from ..scorers import load_adapter

        if not device.startswith("cuda"):
            torch.set_num_threads(threads)
        self.scorer = load_adapter(**{**spec, "device": device})
        self.budget = budget
        loaded = getattr(self.scorer, "model_tag", None)
        if loaded != tag:
            raise ScorerError(f"a worker loaded other files for model {spec.get('model')!r} than the driver "
                              f"(fingerprint {loaded} where the driver's is {tag}): give every machine the same model")

    def chunks(self, texts: Sequence[str]) -> Iterator[tuple[ScoreMap, int]]:
        """Finished sentences as they come, each chunk with the model rows it took."""
        stats, reported = EngineStats(), 0
        for chunk in compute(self.scorer, texts, self.budget, stats, progress=False):
            yield chunk, stats.rows_computed - reported
            reported = stats.rows_computed

class RayWorker(Worker):
    """A scorer actor: built once, then scores block after block for every set, shard and pass of the run."""

    def __init__(self, spec: dict[str, Any], threads: int, budget: int | None, tag: str | None):
        super().__init__(spec, spec.get("device") or "auto", threads, budget, tag)

    def score(self, texts: list[str]) -> tuple[ScoreMap, int]:
        """One block's scores and the model rows they took."""
        scores: ScoreMap = {}
        rows = 0
        for chunk, computed in self.chunks(texts):
            scores.update(chunk)
            rows += computed
        return scores, rows


_ACTORS: dict[str, list[Any]] = {}  # one pool of actors per scorer and setting, for the whole run


def ray_actors(spec: dict[str, Any], scale: ScaleConfig, budget: int | None, tag: str | None) -> list[Any]:
    """The actors scoring with ``spec``: started (and the model loaded in each) on first use, then reused by every
    later call of this process."""
    import ray

    if not ray.is_initialized():
        start_ray(ray, scale)
    resources = ray.cluster_resources()
    gpus = scale.gpus_per_worker if scale.gpus_per_worker is not None else float(resources.get("GPU", 0) > 0)
    workers = scale.workers or (int(resources.get("GPU", 0) // gpus) if gpus else
                                max(1, int(resources.get("CPU", 1) // scale.cpus_per_worker)))
    key = record_text([spec, scale.cpus_per_worker, gpus, workers, budget, tag], sort_keys=True, default=str)
    if key not in _ACTORS:
        info(f"starting {workers} Ray actor(s) for {spec.get('kind', 'the scorer')} ({scale.cpus_per_worker} CPU and "
             f"{gpus:g} GPU each); they load the model once and score every set, shard and pass of this run")
        # an actor lost mid-block (a node gone, a socket closed) is restarted and the block sent again: scoring is
        # a pure function of the texts and only the driver writes the store, so a retry cannot double anything
        actor = ray.remote(num_cpus=scale.cpus_per_worker, num_gpus=gpus, max_restarts=RETRIES,
                           max_task_retries=RETRIES)(RayWorker)
        _ACTORS[key] = [actor.remote(spec, scale.cpus_per_worker, budget, tag) for _ in range(workers)]
    return _ACTORS[key]


def start_ray(ray: Any, scale: ScaleConfig) -> None:
    """Join or start the Ray cluster, keeping this process's own Ctrl-C and SIGTERM handlers (Ray's would print
    multi-line signal dumps instead of the run's one line)."""
    caught = (signal.SIGINT, signal.SIGTERM)
    handlers = {signum: signal.getsignal(signum) for signum in caught}
    ray.init(address=scale.address, **{"log_to_driver": False, "logging_level": logging.ERROR, **scale.init})
    if threading.current_thread() is threading.main_thread():
        for signum, handler in handlers.items():
            if handler is not None:
                signal.signal(signum, handler)


def ray_chunks(spec: dict[str, Any], texts: Sequence[str], scale: ScaleConfig, budget: int | None,
               tag: str | None) -> Iterator[tuple[ScoreMap, int]]:
    """Scores from the run's pool of scorer actors, block by block as each finishes."""
    try:
        from ray.util import ActorPool
    except ImportError:
        raise ConfigError("engine=ray needs Ray: pip install 'rescorer[ray]'") from None
    pool = ActorPool(ray_actors(spec, scale, budget, tag))
    blocks = [list(texts[i : i + scale.block]) for i in range(0, len(texts), scale.block)]
    yield from pool.map_unordered(lambda actor, block: actor.score.remote(block), blocks)


def serve(spec: dict[str, Any], device: str, threads: int, budget: int | None, tag: str | None, texts: list[str],
          out: Any) -> None:
    """A spawned process: score ``texts`` on ``device`` and send finished sentences to the driver."""
    try:
        for chunk in Worker(spec, device, threads, budget, tag).chunks(texts):
            out.put(("scores", chunk))
        out.put(("done", device))
    except BaseException:  # the driver re-raises it with the worker's traceback
        out.put(("error", traceback.format_exc()))


def process_chunks(spec: dict[str, Any], texts: Sequence[str], scale: ScaleConfig, budget: int | None,
                   tag: str | None) -> Iterator[tuple[ScoreMap, int]]:
    """Scores from one spawned process per GPU (or ``workers`` CPU processes), texts sharded by a stable hash."""
    import multiprocessing

    import torch

    gpus = torch.cuda.device_count()
    workers = scale.workers or gpus
    if not workers:
        raise ConfigError("engine=multi_gpu found no GPU: set engine.scale.workers to run CPU processes")
    devices = [f"cuda:{i % gpus}" for i in range(workers)] if gpus else ["cpu"] * workers
    shards: list[list[str]] = [[] for _ in range(workers)]
    for text in texts:
        shards[shard_of(text, workers)].append(text)
    context = multiprocessing.get_context("spawn")
    inbox = context.Queue()
    processes = [context.Process(target=serve, args=(spec, device, scale.cpus_per_worker, budget, tag, shard, inbox),
                                 daemon=True) for device, shard in zip(devices, shards) if shard]
    for process in processes:
        process.start()
    running = len(processes)
    try:
        while running:
            try:
                kind, payload = inbox.get(timeout=5)
            except queue.Empty:
                dead = [p.exitcode for p in processes if p.exitcode not in (None, 0)]
                if dead:
                    raise ScorerError(f"a scoring process died (exit code {dead[0]})") from None
                continue
            if kind == "error":
                raise ScorerError(f"a scoring process failed:\n{payload}")
            if kind == "done":
                running -= 1
            else:
                yield payload
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
            process.join()
        inbox.close()


def scale_out(scorer: "Scorer", todo: Sequence[str], scale: ScaleConfig, budget: int | None, show: bool | None,
              stats: EngineStats, label: str | None = None) -> Iterator[ScoreMap]:
    """Finished sentences of ``todo`` from the workers (``budget`` tokens per batch), longest text first, with
    progress unless ``show`` is False (measured in characters); the workers tokenise and count the rows they
    computed, so the driver never tokenises."""
    texts = sorted(todo, key=len, reverse=True)
    backend = ray_chunks if scale.backend == "ray" else process_chunks
    with Meter(f"{label or scorer.kind} ({scale.backend})", len(texts), sum(map(len, texts)), "sentence",
               show) as meter:
        for chunk, rows in backend(scorer.spec, texts, scale, budget, getattr(scorer, "model_tag", None)):
            stats.rows += rows
            stats.rows_computed += rows
            meter.update(len(chunk), sum(map(len, chunk)))
            yield chunk
