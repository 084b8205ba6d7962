"""Poll a condition in the running step for a short while before handing it to a deferral.

A step that starts something the cluster may finish at once (a wave, a batch) polls it here first:
what finishes that fast never defers (:mod:`operators.deferral` says why that matters on Airflow
3.3). The rehearsal's executor calls it with a zero wait: one poll.

Failure: none of its own; what ``poll`` raises propagates.
"""

from __future__ import annotations

import time
from typing import Callable, Literal

Seen = Literal["done", "waiting", "hand_over"]
"""What one inline poll found: finished, not yet, or something the trigger must judge (stop polling)."""


def wait_inline(poll: Callable[[], Seen], wait_s: float, poll_interval_s: float,
                deadline: float | None = None) -> bool:
    """Poll until ``poll`` says ``done`` (True) or ``hand_over``, or ``wait_s`` passed (False);
    never past ``deadline`` (epoch seconds), so a step's own timeout is not delayed."""
    left = max(0.0, float(wait_s))
    if deadline is not None:
        left = min(left, max(0.0, deadline - time.time()))
    until = time.monotonic() + left
    while True:
        seen = poll()
        if seen != "waiting":
            return seen == "done"
        if time.monotonic() >= until:
            return False
        time.sleep(min(float(poll_interval_s), max(0.0, until - time.monotonic())))
