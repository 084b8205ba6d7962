"""``kafka-runbook restart``'s console: a line per broker step as it happens, and a progress bar on a terminal.

:class:`RollPrinter` is the roll's observer (:attr:`procedures.restart.roll.Roll.observe`): each
:class:`~procedures.restart.roll.RollEvent` becomes one line (UTC time, batch n/N, the brokers, the
step, seconds since the restart command started). Where stdout is a terminal (``isatty()``) a bar
under the lines shows the steps done of the whole roll and what it waits for since when, redrawn
every second; piped or redirected, lines only (no carriage return, no escape sequence).
:func:`step_line` and :func:`bar_text` are the pure parts.

Failure: none of its own; a reader that left is cli/main.py's (PipeSafeStdout drops the output).
"""

from __future__ import annotations

import shutil
import threading
import time
from datetime import datetime, timezone
from typing import Callable, Sequence, TextIO

from procedures.restart.roll import STEP_TEXT, RollEvent

STEPS = tuple(STEP_TEXT)
#: what the roll waits for after each step (the bar's words)
WAITING_AFTER = {
    "": "the stop gate",
    "gate_passed": "leadership to move",
    "demoted": "the restart command",
    "action_run": "the old registration to go",
    "stopped": "the new registration",
    "registered": "every ISR",
    "in_sync": "leaders back",
}
BAR_WIDTH = 24


def _who(brokers: Sequence[int]) -> str:
    return f"broker{'s' if len(brokers) > 1 else ''} {', '.join(map(str, brokers))}"


def step_line(event: RollEvent, batches: int, action_started: float | None) -> str:
    """One step as printed: ``12:00:07 [2/6] broker 4: registered again (new session) +7.1 s``."""
    at = datetime.fromtimestamp(event.at, timezone.utc).strftime("%H:%M:%S")
    since = ""
    if action_started is not None and event.step in ("stopped", "registered", "in_sync", "leaders_back"):
        since = f", +{max(0.0, event.at - action_started):.1f} s after the restart command started"
    return f"{at} [{event.index + 1}/{batches}] {event.who}: {event.text()}{since}"


def bar_text(done_steps: int, total_steps: int, brokers_done: int, brokers_total: int, waiting: str,
             waited_s: float, width: int) -> str:
    """The bar: ``[#####-----] 2/6 brokers restarted · broker 4: waiting for every ISR, 12 s`` cut to ``width``."""
    filled = BAR_WIDTH * done_steps // max(1, total_steps)
    text = (f"[{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {brokers_done}/{brokers_total} brokers restarted"
            + (f" · {waiting}, {waited_s:.0f} s" if waiting else ""))
    return text[:max(10, width - 1)]


class RollPrinter:
    """Prints each step of the roll of ``batches`` (the plan's, in order; ``done``: indices already done)."""

    def __init__(self, out: TextIO, batches: Sequence[Sequence[int]], done: Sequence[int] = (),
                 clock: Callable[[], float] = time.time) -> None:
        self.out = out
        self.batches = [tuple(b) for b in batches]
        self.done = set(done)
        self.clock = clock
        self.tty = bool(getattr(out, "isatty", lambda: False)())
        self.lock = threading.Lock()
        self.index = next((i for i in range(len(self.batches)) if i not in self.done), len(self.batches))
        self.step = ""
        self.since = clock()
        self.action_started: dict[int, float] = {}
        self.bar_shown = False
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def __enter__(self) -> "RollPrinter":
        if self.tty:
            self._draw()
            self._ticker = threading.Thread(target=self._tick, daemon=True, name="restart-progress")
            self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop redrawing and take the bar away (the report follows on clean lines)."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(5)
        with self.lock:
            self._clear()
            self.out.flush()

    def __call__(self, event: RollEvent) -> None:
        with self.lock:
            if event.step == "demoted":
                self.action_started[event.index] = event.at
            if event.index != self.index:
                self.index = event.index
            self.step = event.step
            self.since = self.clock()
            if event.step == "leaders_back":
                self.done.add(event.index)
                self.index = next((i for i in range(len(self.batches)) if i not in self.done), len(self.batches))
                self.step = ""
            self._clear()
            self.out.write(step_line(event, len(self.batches), self.action_started.get(event.index)) + "\n")
            self._draw()
            self.out.flush()

    # ------------------------------------------------------------------ the bar (terminal only)
    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            with self.lock:
                self._draw()
                self.out.flush()

    def _clear(self) -> None:
        if self.tty and self.bar_shown:
            self.out.write("\r\x1b[K")
            self.bar_shown = False

    def _draw(self) -> None:
        if not self.tty or self._stop.is_set():
            return
        per = len(STEPS)
        done_steps = sum(per for i in self.done) + (STEPS.index(self.step) + 1 if self.step else 0) \
            * (self.index not in self.done)
        brokers_done = sum(len(self.batches[i]) for i in self.done)
        waiting = "" if self.index >= len(self.batches) else \
            f"{_who(self.batches[self.index])}: waiting for {WAITING_AFTER[self.step]}"
        width = shutil.get_terminal_size((100, 20)).columns
        self.out.write("\r\x1b[K" + bar_text(done_steps, per * len(self.batches), brokers_done,
                                            sum(map(len, self.batches)), waiting, self.clock() - self.since, width))
        self.bar_shown = True
