"""Progress of a scoring run: plain lines off a terminal, and one estimate line after a short probe, judged
with a clock the test moves (no sleeping, nothing depends on the machine's speed)."""
from __future__ import annotations

import io

from rescorer.engine.progress import Progress, duration


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def run(kind: str, seconds_per_step: float, steps: int, enabled=None, label=None) -> list[str]:
    """``steps`` equal batches of 10 rows × 100 tokens, each taking ``seconds_per_step``."""
    clock, stream = Clock(), io.StringIO()
    progress = Progress(kind, texts=900, cached=100, rows=10 * steps, tokens=1000 * steps, enabled=enabled,
                        stream=stream, clock=clock, label=label)
    for _ in range(steps):
        clock.now += seconds_per_step
        progress.update(10, 1000)
    progress.close()
    return stream.getvalue().splitlines()


def test_a_long_run_states_its_size_and_estimate_once_suggests_the_student_and_says_what_it_took():
    lines = run("pll", 1.0, 1000)   # 1,000 s in all
    estimates = [line for line in lines if "model rows" in line]
    assert estimates == ["rescorer: scoring 900 texts with pll (100 already in the store): 10,000 model rows, "
                         "about 16 min 40 s in all; for a faster run try scorer=[student] (the one-pass student)"]
    assert lines[-1] == "rescorer: pll: 800 texts scored in 16 min 40 s, 0.8 texts/s (10,000 rows)"


def test_off_a_terminal_a_plain_line_comes_every_ten_seconds():
    lines = [line for line in run("ll", 1.0, 100) if "elapsed" in line]
    assert len(lines) == 10
    assert lines[0] == "rescorer: ll: 100/1,000 rows (10%), 10 s elapsed, about 1 min 30 s left"


def test_short_runs_and_the_student_say_less_and_progress_false_says_nothing():
    assert run("pll", 0.1, 100) == []                       # 10 s in all: no estimate, no plain line
    student = [line for line in run("student", 1.0, 1000) if "model rows" in line]
    assert len(student) == 1 and "try scorer" not in student[0]
    assert run("pll", 1.0, 1000, enabled=False) == []


def test_a_named_column_is_shown_by_its_name_and_a_student_column_gets_no_hint():
    lines = run("ll", 1.0, 1000, label="ll_ctx")
    assert lines[0].startswith("rescorer: scoring 900 texts with ll_ctx (100 already in the store)")
    assert lines[1].startswith("rescorer: ll_ctx: 100/10,000 rows (1%), 10 s elapsed")
    assert lines[-1].startswith("rescorer: ll_ctx: 800 texts scored in 16 min 40 s")
    assert not any("try scorer" in line for line in run("student", 1.0, 1000, label="fast"))


def test_duration_reads_as_a_person_would_say_it():
    assert [duration(s) for s in (0, 45, 200, 3600, 7500)] == ["0 s", "45 s", "3 min 20 s", "1 h 00 min", "2 h 05 min"]


def seconds_of(text: str) -> float:
    """The seconds a :func:`duration` string says (``1 min 05 s``, ``2 h 05 min``, ``45 s``)."""
    units = {"h": 3600, "min": 60, "s": 1}
    parts = text.split()
    return float(sum(int(n) * units[u] for n, u in zip(parts[::2], parts[1::2])))


def test_the_estimate_follows_the_recent_rate_within_a_fifth_once_a_tenth_is_done():
    """The first 5% of the batches warm up at a quarter of the speed (loading, allocating): every plain line from
    10% on predicts the total within ±20% (a rate over the whole run so far predicts 2.2× the total at 10%)."""
    clock, stream = Clock(), io.StringIO()
    steps = 1000
    progress = Progress("ll", texts=10 * steps, cached=0, rows=10 * steps, tokens=1000 * steps, stream=stream,
                        clock=clock, enabled=None)
    for step in range(steps):
        clock.now += 4.0 if step < steps // 20 else 1.0
        progress.update(10, 1000)
    actual = clock.now  # 1,150 s
    checked = 0
    for line in stream.getvalue().splitlines():
        if "elapsed" not in line:
            continue
        done = int(line.split("rows (")[1].split("%")[0])
        elapsed, left = line.split("), ")[1].split(" elapsed, about ")
        predicted = seconds_of(elapsed) + seconds_of(left.removesuffix(" left"))
        if done >= 10:
            checked += 1
            assert abs(predicted / actual - 1) <= 0.2, line
    assert checked >= 80
