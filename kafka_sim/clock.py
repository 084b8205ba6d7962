"""The simulated clock: simulated seconds = wall seconds since start × speed.

The replication model never reads this clock itself; the engine reads it once per step and
passes the time in, so the model's arithmetic is a pure function of the times it is given.
"""

from __future__ import annotations

import time


class SimClock:
    """Monotonic simulated time, starting at 0 when constructed."""

    def __init__(self, speed: float) -> None:
        self.speed = float(speed)
        self._wall0 = time.monotonic()

    def now(self) -> float:
        """Simulated seconds since start."""
        return (time.monotonic() - self._wall0) * self.speed

    def wall_delay(self, sim_at: float) -> float:
        """Wall seconds until simulated time ``sim_at`` (0 when already past)."""
        return max(0.0, (sim_at - self.now()) / self.speed)
