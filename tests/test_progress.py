"""Progress of a scoring run: plain lines off a terminal, and one estimate line as soon as there is a rate, judged
with a clock the test moves (no sleeping, nothing depends on the machine's speed); every line a record of the
``rescorer`` logger, and neither bar nor line where the logger shows no INFO."""
from __future__ import annotations

import io
import logging
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

import rescorer
from rescorer.engine.progress import Meter, Progress, duration
from rescorer.log import LOGGER

PACKAGE = Path(rescorer.__file__).parent


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextmanager
def logged() -> Iterator[list[str]]:
    """The messages of the ``rescorer`` logger while it shows INFO, as a Python program that configured it sees."""
    handler, level = Lines(), LOGGER.level
    LOGGER.addHandler(handler)
    LOGGER.setLevel(logging.INFO)
    try:
        yield handler.lines
    finally:
        LOGGER.removeHandler(handler)
        LOGGER.setLevel(level)


class Screen(io.StringIO):
    """A terminal: what is written to it, kept."""

    def isatty(self) -> bool:
        return True


def steps(progress: Progress, clock: Clock, seconds_per_step: float, count: int) -> None:
    """``count`` equal batches of 10 rows × 1,000 tokens, each taking ``seconds_per_step``; then the end."""
    for _ in range(count):
        clock.now += seconds_per_step
        progress.update(10, 1000)
    progress.close()


def run(kind: str, seconds_per_step: float, count: int, show=None, label=None) -> list[str]:
    """What the logger is told over ``count`` batches (off a terminal)."""
    clock = Clock()
    with logged() as lines:
        steps(Progress(kind, texts=900, cached=100, rows=10 * count, tokens=1000 * count, show=show,
                       stream=io.StringIO(), clock=clock, label=label), clock, seconds_per_step, count)
    return lines


def test_a_long_run_states_its_size_and_estimate_once_suggests_the_student_and_says_what_it_took():
    lines = run("pll", 1.0, 1000)   # 1,000 s in all
    estimates = [line for line in lines if "model rows" in line]
    assert estimates == ["scoring 900 texts with pll (100 already in the store): 10,000 model rows, "
                         "about 16:40 in all; for a faster run try scorer=[student] (the one-pass student)"]
    assert lines[-1] == "pll: 800 texts scored in 16:40, 0.8 texts/s (10,000 rows)"


def test_off_a_terminal_a_plain_line_comes_every_ten_seconds():
    lines = [line for line in run("ll", 1.0, 100) if "elapsed" in line]
    assert len(lines) == 10
    assert lines[0] == "ll: 100/1,000 rows (10%), 00:10 elapsed, about 01:30 left"


def test_short_runs_and_the_student_say_less_and_progress_false_says_nothing():
    assert run("pll", 0.1, 100) == []                       # 10 s in all: no estimate, no plain line
    student = [line for line in run("student", 1.0, 1000) if "model rows" in line]
    assert len(student) == 1 and "try scorer" not in student[0]
    assert run("pll", 1.0, 1000, show=False) == []


def test_a_named_column_is_shown_by_its_name_and_a_student_column_gets_no_hint():
    lines = run("ll", 1.0, 1000, label="ll_ctx")
    assert lines[0].startswith("scoring 900 texts with ll_ctx (100 already in the store)")
    assert lines[1].startswith("ll_ctx: 100/10,000 rows (1%), 00:10 elapsed")
    assert lines[-1].startswith("ll_ctx: 800 texts scored in 16:40")
    assert not any("try scorer" in line for line in run("student", 1.0, 1000, label="fast"))


@pytest.mark.parametrize("seconds", [1.0, 3.0, 30.0])
def test_the_estimate_comes_with_the_first_update_that_has_a_rate(seconds):
    """However long the first batch takes, the estimate is told when it ends, not with the first plain line."""
    clock = Clock()
    with logged() as lines:
        progress = Progress("pll", texts=900, cached=0, rows=10_000, tokens=1_000_000, stream=io.StringIO(),
                            clock=clock)
        progress.update(0, 0)  # no work done yet: no rate, no estimate
        assert lines == []
        clock.now += seconds
        progress.update(10, 1000)
        assert lines[0] == (f"scoring 900 texts with pll (0 already in the store): 10,000 model rows, about "
                            f"{duration(1000 * seconds)} in all; for a faster run try scorer=[student] (the one-pass "
                            "student)")
        clock.now += seconds
        progress.update(10, 1000)
        assert [line for line in lines if "model rows" in line] == lines[:1]  # said once


def test_a_loop_off_a_terminal_tells_its_estimate_at_its_first_step():
    clock = Clock()
    with logged() as lines:
        meter = Meter("train", 100, 100, "step", stream=io.StringIO(), clock=clock)
        clock.now += 2.0
        meter.update(1, 1)
    assert lines == ["train: 1/100 steps (1%), 00:02 elapsed, about 03:18 left"]


def test_a_time_in_a_line_reads_as_the_bar_writes_it():
    assert [duration(s) for s in (0, 45, 200, 3600, 7500)] == ["00:00", "00:45", "03:20", "1:00:00", "2:05:00"]


def seconds_of(text: str) -> float:
    """The seconds a :func:`duration` string says (``00:45``, ``03:20``, ``2:05:00``), counted by hand."""
    total = 0
    for part in text.split(":"):
        total = 60 * total + int(part)
    return float(total)


def test_the_estimate_follows_the_recent_rate_within_a_fifth_once_a_tenth_is_done():
    """The first 5% of the batches warm up at a quarter of the speed (loading, allocating): every plain line from
    10% on predicts the total within ±20% (a rate over the whole run so far predicts 2.2× the total at 10%)."""
    clock, count = Clock(), 1000
    with logged() as lines:
        progress = Progress("ll", texts=10 * count, cached=0, rows=10 * count, tokens=1000 * count,
                            stream=io.StringIO(), clock=clock)
        for step in range(count):
            clock.now += 4.0 if step < count // 20 else 1.0
            progress.update(10, 1000)
    actual = clock.now  # 1,150 s
    checked = 0
    for line in lines:
        if "elapsed" not in line:
            continue
        done = int(line.split("rows (")[1].split("%")[0])
        elapsed, left = line.split("), ")[1].split(" elapsed, about ")
        predicted = seconds_of(elapsed) + seconds_of(left.removesuffix(" left"))
        if done >= 10:
            checked += 1
            assert abs(predicted / actual - 1) <= 0.2, line
    assert checked >= 80


def test_with_the_command_lines_handler_every_line_is_a_log_record_shown_on_stdout(terminal, caplog, capsys):
    LOGGER.addHandler(caplog.handler)
    clock = Clock()
    steps(Progress("pll", texts=900, cached=100, rows=10_000, tokens=1_000_000, stream=io.StringIO(), clock=clock),
          clock, 1.0, 1000)
    said = [r.getMessage() for r in caplog.records if r.name == "rescorer" and r.levelno == logging.INFO]
    shown = capsys.readouterr()
    assert said[0].startswith("scoring 900 texts with pll") and said[-1].startswith("pll: 800 texts scored")
    assert len([line for line in said if "elapsed" in line]) == 100
    assert shown.out.splitlines() == said and shown.err == ""


def test_a_line_logged_while_the_bar_is_drawn_clears_it_and_starts_a_line_of_its_own(terminal, monkeypatch):
    screen = Screen()
    monkeypatch.setattr("sys.stdout", screen)
    clock = Clock()
    steps(Progress("pll", texts=900, cached=100, rows=10_000, tokens=1_000_000, stream=screen, clock=clock),
          clock, 1.0, 1000)
    drawn = screen.getvalue()
    assert "row/s]" in drawn  # the bar, with its rate
    for line in ("scoring 900 texts with pll", "pll: 800 texts scored in 16:40"):
        at = drawn.index(line)
        assert drawn[at - 1] in "\r\n", repr(drawn[at - 80 : at + len(line)])


@pytest.mark.parametrize("quiet", ["logging.disable", "a logger left at WARNING"])
def test_where_the_logger_shows_no_info_there_is_no_bar_and_no_line_even_on_a_terminal(quiet, caplog):
    screen, clock = Screen(), Clock()
    level = LOGGER.level
    if quiet == "logging.disable":
        caplog.set_level(logging.INFO, logger="rescorer")
        logging.disable(logging.CRITICAL)
    else:
        LOGGER.setLevel(logging.WARNING)
    try:
        for show in (None, True):
            steps(Progress("pll", texts=900, cached=100, rows=10_000, tokens=1_000_000, show=show, stream=screen,
                           clock=clock), clock, 1.0, 1000)
    finally:
        logging.disable(logging.NOTSET)
        LOGGER.setLevel(level)
    assert screen.getvalue() == "" and caplog.records == []


def test_a_scorer_asked_for_a_bar_prints_nothing_under_logging_disable(tiny_causal, capfd):
    scorer = rescorer.load_scorer("ll", str(tiny_causal), progress=True, store=None)
    logging.disable(logging.CRITICAL)
    try:
        scores = scorer.score(["the cat sat on the mat", "a dog"])
    finally:
        logging.disable(logging.NOTSET)
    assert len(scores) == 2
    assert capfd.readouterr() == ("", "")


def test_only_the_progress_module_and_the_log_write_around_the_logger():
    writers = re.compile(r"tqdm\.write|sys\.(stderr|stdout)\.write|from tqdm|import tqdm")
    allowed = {PACKAGE / "engine" / "progress.py", PACKAGE / "log.py"}
    found = sorted(str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
                   if path not in allowed and writers.search(path.read_text(encoding="utf-8")))
    assert found == []


def test_a_program_that_shows_info_with_its_own_handler_gets_plain_lines_and_no_bar_on_a_terminal():
    screen, clock = Screen(), Clock()
    with logged() as lines:
        steps(Progress("pll", texts=900, cached=100, rows=10_000, tokens=1_000_000, stream=screen, clock=clock),
              clock, 1.0, 1000)
    assert screen.getvalue() == ""
    assert len([line for line in lines if "elapsed" in line]) == 100 and lines[-1].startswith("pll: 800 texts")


def test_a_resumed_loop_counts_the_steps_done_before_and_its_estimate_covers_only_the_rest():
    clock = Clock()
    with logged() as lines:
        meter = Meter("train", 100, 100, "step", stream=io.StringIO(), clock=clock)
        meter.skip(40, 40)
        meter.note({"dev_loss": "2.5"})
        for _ in range(20):
            clock.now += 1.0
            meter.update(1, 1)
        meter.close()
    assert lines == ["train: 41/100 steps (41%), 00:01 elapsed, about 00:59 left, dev_loss 2.5",
                     "train: 50/100 steps (50%), 00:10 elapsed, about 00:50 left, dev_loss 2.5",
                     "train: 60/100 steps (60%), 00:20 elapsed, about 00:40 left, dev_loss 2.5"]
