"""The simulated clock: simulated seconds = wall seconds the engine spent waiting × speed.

The engine pauses the clock while it handles events (its ZooKeeper round trips take wall time
that a real controller spends in milliseconds; at 3600× a 10 ms write would otherwise cost 36
simulated seconds), and resumes it while it waits — up to the simulated time of its next due
event at most (:meth:`SimClock.resume` ``until``): a loaded host that wakes the engine 50 ms late
would otherwise add 180 simulated seconds at 3600×, a fifth of a short wave, to whatever the event
completes. The replication model never reads this
clock itself: the engine reads it once per step and passes the time in, so the model's
arithmetic is a pure function of the times it is given.
"""

from __future__ import annotations

import threading
import time


class SimClock:
    """Simulated time, starting at 0 when constructed; runs unless paused or held.

    Two parties stop it: the engine (:meth:`pause` while it handles events, :meth:`resume` while it
    waits) and a tool running in the same process (:meth:`hold` / :meth:`release`, counted: a
    rehearsal holds it while the executor reads ZooKeeper, so the tool's own wall time costs no
    simulated time, as a real tool's milliseconds cost a real cluster nothing). It runs only when
    the engine is waiting and nobody holds it.
    """

    def __init__(self, speed: float) -> None:
        self.speed = float(speed)
        self._lock = threading.Lock()
        self._base = 0.0
        self._since = time.monotonic()
        self._paused = False
        self._held = 0
        self._until: float | None = None    # the engine's next due event while it waits (resume)
        self._limit: float | None = None    # a tool's next wake-up while it sleeps (limit)

    def _running(self) -> bool:
        return not self._paused and self._held == 0

    def _cap(self) -> float | None:
        if self._until is None:
            return self._limit
        return self._until if self._limit is None else min(self._until, self._limit)

    def _change(self, paused: bool | None = None, held: int = 0) -> None:
        with self._lock:
            was = self._running()
            now = time.monotonic()
            if was:
                self._base += (now - self._since) * self.speed
                cap = self._cap()
                if cap is not None:
                    self._base = min(self._base, cap)
            if paused is not None:
                self._paused = paused
            self._held = max(0, self._held + held)
            if self._running():
                self._since = now

    def now(self) -> float:
        """Simulated seconds since start."""
        with self._lock:
            if not self._running():
                return self._base
            now = self._base + (time.monotonic() - self._since) * self.speed
            cap = self._cap()
            return now if cap is None else min(now, cap)

    def pause(self) -> None:
        self._change(paused=True)
        with self._lock:
            self._until = None

    def resume(self, until: float | None = None) -> None:
        """Let simulated time run, up to ``until`` (the engine's next due catch-up or timer) at most:
        the clock stops there until the engine pauses it again, so the event happens at its own
        time however late the host wakes the engine (never before what the clock already showed)."""
        with self._lock:
            self._until = None if until is None else max(float(until), self._base)
        self._change(paused=False)

    def limit(self, sim_at: float | None) -> None:
        """A tool about to sleep until ``sim_at``: the clock stops there until it wakes (``None``
        lifts the limit), so it wakes at exactly that simulated time however late the host runs it."""
        self._change()
        with self._lock:
            self._limit = None if sim_at is None else max(float(sim_at), self._base)

    def limit_at(self) -> float | None:
        """The tool's wake-up the clock stops at (:meth:`limit`), or ``None``."""
        with self._lock:
            return self._limit

    def suspend_holds(self) -> int:
        """Lift every hold at once (a tool about to sleep: nobody else works); returns how many, for
        :meth:`restore_holds`."""
        self._change()
        with self._lock:
            count, self._held = self._held, 0
            if count and self._running():
                self._since = time.monotonic()
            return count

    def restore_holds(self, count: int) -> None:
        self._change(held=count)

    def hold(self) -> None:
        """Stop the clock for a tool's work (counted; see the class docstring)."""
        self._change(held=1)

    def release(self) -> None:
        self._change(held=-1)

    def skip(self, seconds: float) -> None:
        """Jump ``seconds`` of simulated time at once (a rehearsal waiting for a maintenance window
        while nothing copies: the model and timers catch up exactly at the engine's next step)."""
        if seconds < 0:
            raise ValueError(f"cannot skip {seconds!r} simulated seconds backwards")
        with self._lock:
            self._base += float(seconds)
            self._until = None

    def wall_delay(self, sim_at: float) -> float:
        """Wall seconds of running clock until simulated time ``sim_at`` (0 when past; while a tool
        holds the clock, at least 5 ms, so a waiting engine does not spin)."""
        delay = max(0.0, (sim_at - self.now()) / self.speed)
        return max(delay, 0.005) if self._held else delay
