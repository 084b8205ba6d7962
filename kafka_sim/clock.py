"""The simulated clock: simulated seconds = wall seconds the engine spent waiting × speed.

The engine pauses the clock while it handles events (its ZooKeeper round trips take wall time
that a real controller spends in milliseconds; at 3600× a 10 ms write would otherwise cost 36
simulated seconds), and resumes it while it waits. The replication model never reads this
clock itself: the engine reads it once per step and passes the time in, so the model's
arithmetic is a pure function of the times it is given.
"""

from __future__ import annotations

import threading
import time


class SimClock:
    """Simulated time, starting at 0 when constructed; runs unless paused."""

    def __init__(self, speed: float) -> None:
        self.speed = float(speed)
        self._lock = threading.Lock()
        self._base = 0.0
        self._since = time.monotonic()
        self._paused = False

    def now(self) -> float:
        """Simulated seconds since start."""
        with self._lock:
            if self._paused:
                return self._base
            return self._base + (time.monotonic() - self._since) * self.speed

    def pause(self) -> None:
        with self._lock:
            if not self._paused:
                self._base += (time.monotonic() - self._since) * self.speed
                self._paused = True

    def resume(self) -> None:
        with self._lock:
            if self._paused:
                self._since = time.monotonic()
                self._paused = False

    def wall_delay(self, sim_at: float) -> float:
        """Wall seconds of running clock until simulated time ``sim_at`` (0 when past)."""
        return max(0.0, (sim_at - self.now()) / self.speed)
