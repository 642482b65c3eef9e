"""Progress of every long loop (scoring, scale-out, a sharded apply, training), told through the ``rescorer``
logger: a bar on a terminal where the command line shows the messages; elsewhere a plain line every ``every``
seconds; estimates of the time left. Nothing is shown unless the logger shows INFO (a Python program that has not
configured logging, or has called ``logging.disable()``, sees neither bar nor line).

Time is measured in units of work that time grows with (tokens, characters, bytes), not in items: rows run longest
first, so rows per second early on would overstate the wait. The rate is the recent one (the last quarter of the
time so far): the first batches (warming up, allocating) would otherwise weigh on the estimate for the whole run.
The first estimate comes at the first update that has a rate, the later lines refine it; a scoring run states then
what it scores and about how long it will take (with a faster scorer to try when that is long), and at its end what
it took."""
from __future__ import annotations

import logging
import sys
import time
from collections import deque
from typing import Callable, Mapping, TextIO

from tqdm.auto import tqdm

from ..log import LOGGER, info, writes_around_bars

SHOW_ABOVE = 20.0     # an estimate shorter than this is not worth a line
LONG = 600.0          # an estimate longer than this suggests the one-pass student
FAST_KIND = "student"
RECENT = 0.25         # the estimate's rate: work per second over this share of the time so far
CLOCK: Callable[[], float] = time.perf_counter  # what a meter reads the time from unless given a clock


def duration(seconds: float) -> str:
    """``00:45``, ``03:20``, ``2:05:00``: the bar's own way of writing a time, to the nearest second."""
    return tqdm.format_interval(round(max(seconds, 0)))


class Meter:
    """``count`` items (a ``unit`` each: rows, sentences, shards) holding ``work`` units of work in all, shown as
    ``label``. ``show``: None → a bar on a terminal where the command line's handler shows the messages, a plain line
    every ``every`` seconds elsewhere; True → a bar; False → neither (what the caller says still goes to the
    logger)."""

    def __init__(self, label: str, count: int, work: float, unit: str = "row", show: bool | None = None,
                 every: float = 10.0, stream: TextIO | None = None, clock: Callable[[], float] | None = None):
        self.label, self.count, self.work, self.unit = label, count, work, unit
        self.stream, self.clock, self.every = stream or sys.stderr, clock or CLOCK, every
        terminal = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.quiet = show is False or not LOGGER.isEnabledFor(logging.INFO)
        drawn = not self.quiet and (show is True or terminal and writes_around_bars())
        self.plain = not self.quiet and not drawn
        self.bar = tqdm(total=count, unit=unit, desc=label, disable=not drawn, dynamic_ncols=True, file=self.stream)
        self.start = self.last = self.clock()
        self.items = self.done = 0
        self.timed = False  # whether an update has had a rate yet
        self.notes: dict[str, str] = {}
        self.samples: deque[tuple[float, float]] = deque([(self.start, 0)])  # (time, work done) in the window

    def update(self, items: int, work: float) -> None:
        """``items`` more done, holding ``work`` units of work."""
        self.items += items
        self.done += work
        self.bar.update(items)
        now = self.clock()
        self.samples.append((now, self.done))
        while len(self.samples) > 2 and self.samples[1][0] <= now - RECENT * (now - self.start):
            self.samples.popleft()  # the window only grows: a sample that left it never comes back
        if self.quiet:
            return
        if not self.timed and self.done > 0 and now > self.start:
            self.timed = True
            if now - self.start + self.left(now) >= SHOW_ABOVE:
                self.first_estimate(now)
        if self.plain and now - self.last >= self.every:
            self.last = now
            self.line(now)

    def line(self, now: float) -> None:
        """The plain line: the count, the time so far and the estimate of the time left."""
        notes = "".join(f", {name} {value}" for name, value in self.notes.items())
        self.say(f"{self.label}: {self.items:,}/{self.count:,} {self.unit}s "
                 f"({100 * self.items / max(self.count, 1):.0f}%), {duration(now - self.start)} elapsed, "
                 f"about {duration(self.left(now))} left{notes}")

    def skip(self, items: int, work: float) -> None:
        """``items`` done before this run: they count as done and take none of the time left."""
        self.items += items
        self.work -= work
        if not self.bar.disable:  # shown as done, and left out of the bar's rate
            self.bar.initial += items
            self.bar.n = self.bar.last_print_n = self.bar.n + items
            self.bar.refresh()

    def note(self, values: Mapping[str, str]) -> None:
        """Values shown after the count from now on (a loss, a metric): on the bar and at the end of plain lines."""
        self.notes = dict(values)
        self.bar.set_postfix(self.notes)

    def first_estimate(self, now: float) -> None:
        """What to say at the first update that has a rate, in a run long enough for an estimate: the plain line
        (a bar shows its own)."""
        if self.plain and now - self.last < self.every:  # else the plain line comes with this update
            self.line(now)

    def left(self, now: float) -> float:
        """Seconds still to go at the recent rate (over the samples in the window and the one just before it)."""
        since, done = self.samples[0]
        rate = (self.done - done) / max(now - since, 1e-9)
        return (self.work - self.done) / max(rate, 1e-9)

    def remaining(self) -> str | None:
        """``about 3 min 20 s left``, once some work is timed and while some is left; else None."""
        if not self.done or self.done >= self.work:
            return None
        return f"about {duration(self.left(self.clock()))} left"

    def say(self, text: str) -> None:
        info(text)

    def close(self) -> None:
        self.bar.close()

    def __enter__(self) -> "Meter":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class Progress(Meter):
    """A scoring run: rows and tokens done of ``rows``/``tokens`` for a ``kind`` scorer over ``texts`` (``cached`` of
    them found in the store), named ``label`` (its column; default: the kind) on screen; ``show`` as for
    :class:`Meter`, False also keeping the estimate and closing lines back."""

    def __init__(self, kind: str, texts: int, cached: int, rows: int, tokens: int, show: bool | None = None,
                 every: float = 10.0, stream: TextIO | None = None, clock: Callable[[], float] | None = None,
                 label: str | None = None):
        super().__init__(label or kind, rows, tokens, "row", show, every, stream, clock)
        self.kind, self.texts, self.cached = kind, texts, cached
        self.announced = False

    def first_estimate(self, now: float) -> None:
        """One line: what is scored and about how long it takes; a faster scorer to try when that is long."""
        total = now - self.start + self.left(now)
        self.announced = True
        hint = (f"; for a faster run try scorer=[{FAST_KIND}] (the one-pass student)"
                if total > LONG and self.kind != FAST_KIND else "")
        self.say(f"scoring {self.texts:,} texts with {self.label} ({self.cached:,} already in the store): "
                 f"{self.count:,} model rows, about {duration(total)} in all{hint}")

    def close(self) -> None:
        """Close the bar; after a run long enough to have had its estimate line, one line of what it took."""
        super().close()
        if self.announced:
            took = self.clock() - self.start
            scored = self.texts - self.cached
            self.say(f"{self.label}: {scored:,} texts scored in {duration(took)}, {scored / max(took, 1e-9):.1f} "
                     f"texts/s ({self.items:,} rows)")
