"""Progress of a scoring run: a bar on a terminal; elsewhere a plain line every ``every`` seconds; and, once a
short probe has run, one line with what is being scored and how long it will take (with a faster scorer to try
when that is long), and at its end what it took. Time is measured in padded tokens, as batches are made: rows run
longest first, so rows per second early on would overstate the wait. The rate is the recent one (the last quarter
of the time so far): the first batches (warming up, allocating) would otherwise weigh on the estimate for the whole
run."""
from __future__ import annotations

import sys
import time
from collections import deque
from typing import Callable, TextIO

from tqdm.auto import tqdm

PROBE_SECONDS = 3.0   # scoring time before the estimate is printed, at the earliest …
PROBE_SHARE = 0.1     # … once this share of the tokens is done (the first batches warm up and run slower) …
PROBE_LATEST = 10.0   # … or after this many seconds, whichever comes first
SHOW_ABOVE = 20.0     # an estimate shorter than this is not worth a line
LONG = 600.0          # an estimate longer than this suggests the one-pass student
FAST_KIND = "student"
RECENT = 0.25         # the estimate's rate: tokens per second over this share of the time so far


def duration(seconds: float) -> str:
    """``45 s``, ``3 min 20 s``, ``2 h 05 min``."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class Progress:
    """Tracks rows and tokens done of ``rows``/``tokens`` for a ``kind`` scorer over ``texts`` (``cached`` of them
    found in the store), named ``label`` (its column; default: the kind) on screen. ``enabled``: None → bar on a
    terminal, plain lines otherwise; False → silent."""

    def __init__(self, kind: str, texts: int, cached: int, rows: int, tokens: int, enabled: bool | None = None,
                 every: float = 10.0, stream: TextIO | None = None, clock: Callable[[], float] = time.perf_counter,
                 label: str | None = None):
        self.kind, self.texts, self.cached, self.rows, self.tokens = kind, texts, cached, rows, tokens
        self.label = label or kind
        self.stream, self.clock, self.every = stream or sys.stderr, clock, every
        terminal = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.silent = enabled is False
        self.plain = not self.silent and not terminal and enabled is None
        self.bar = tqdm(total=rows, unit="row", desc=self.label, disable=self.silent or self.plain, dynamic_ncols=True,
                        file=self.stream)
        self.start = self.last = clock()
        self.rows_done = self.tokens_done = 0
        self.samples: deque[tuple[float, int]] = deque([(self.start, 0)])  # (time, tokens done) in the window
        self.estimated = self.announced = False

    def update(self, rows: int, tokens: int) -> None:
        self.rows_done += rows
        self.tokens_done += tokens
        self.bar.update(rows)
        now = self.clock()
        self.samples.append((now, self.tokens_done))
        while len(self.samples) > 2 and self.samples[1][0] <= now - RECENT * (now - self.start):
            self.samples.popleft()  # the window only grows: a sample that left it never comes back
        if self.silent:
            return
        probed = now - self.start >= PROBE_SECONDS and self.tokens_done >= PROBE_SHARE * self.tokens
        if not self.estimated and (probed or now - self.start >= PROBE_LATEST):
            self.estimated = True
            self.estimate(now)
        if self.plain and now - self.last >= self.every:
            self.last = now
            self.say(f"{self.label}: {self.rows_done:,}/{self.rows:,} rows ({100 * self.rows_done / max(self.rows, 1):.0f}%), "
                     f"{duration(now - self.start)} elapsed, about {duration(self.left(now))} left")

    def left(self, now: float) -> float:
        """Seconds still to go at the recent rate (over the samples in the window and the one just before it)."""
        since, tokens = self.samples[0]
        rate = (self.tokens_done - tokens) / max(now - since, 1e-9)
        return (self.tokens - self.tokens_done) / max(rate, 1e-9)

    def estimate(self, now: float) -> None:
        """One line: what is scored and about how long it takes; a faster scorer to try when that is long."""
        total = now - self.start + self.left(now)
        if total < SHOW_ABOVE:
            return
        self.announced = True
        hint = (f"; for a faster run try scorer=[{FAST_KIND}] (the one-pass student)"
                if total > LONG and self.kind != FAST_KIND else "")
        self.say(f"scoring {self.texts:,} texts with {self.label} ({self.cached:,} already in the store): "
                 f"{self.rows:,} model rows, about {duration(total)} in all{hint}")

    def say(self, text: str) -> None:
        tqdm.write(f"rescorer: {text}", file=self.stream)
        self.stream.flush()

    def close(self) -> None:
        """Close the bar; after a run long enough to have had its estimate line, one line of what it took."""
        self.bar.close()
        if self.announced:
            took = self.clock() - self.start
            scored = self.texts - self.cached
            self.say(f"{self.label}: {scored:,} texts scored in {duration(took)}, {scored / max(took, 1e-9):.1f} "
                     f"texts/s ({self.rows_done:,} rows)")
