"""The clock a polling trigger reads and sleeps on: wall time in a triggerer, simulated in tests.

A trigger never calls ``time.time()`` or ``asyncio.sleep()`` itself; it asks ``self.clock``
(:data:`WALL` unless replaced). The clock is not part of ``serialize()``: a trigger rebuilt by a
triggerer always runs on :data:`WALL`, and its deadlines are absolute epoch seconds on that
clock. Tests replace ``trigger.clock`` with a :class:`ManualClock`, whose time moves only when
the trigger sleeps on it, so what a trigger does by a given time is checked on that clock
without ever measuring wall time.

Failure: none of its own; a negative sleep is treated as zero.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    """Epoch seconds and a sleep on the same time line."""

    def time(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class WallClock:
    """``time.time()`` and ``asyncio.sleep()``."""

    def time(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


WALL = WallClock()


class ManualClock:
    """Simulated epoch seconds that advance only by what is slept (each sleep still yields to
    the event loop once, so other tasks run)."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = float(start)
        self.slept: list[float] = []

    def time(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        seconds = max(0.0, float(seconds))
        self.slept.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)
