"""One bounded wait the emulator's callers share: poll a condition until it holds or time runs out."""

from __future__ import annotations

import time
from typing import Callable


def wait_until(predicate: Callable[[], bool], timeout: float, step: float = 0.02) -> bool:
    """True as soon as ``predicate()`` holds; False once ``timeout`` seconds passed without it
    (checked at least once, every ``step`` seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(step)
