"""Deferring without losing Airflow 3.3's scheduler race.

On a real scheduler a trigger that fires before the executor has reported the deferring attempt's
exit gets the resumed task failed: the scheduler reads "finished with state success, but the task
instance's state attribute is queued" and the worker gets "409 TI was not in the running state".
``dag.test()`` never shows it; the real-scheduler tests do (``execute_waves`` in issue 12, then
``elect_batches`` and ``delete_batches``, whose batches the emulator finishes in milliseconds).
Three things keep a step clear of it, and every deferring step here uses all three:

* **wait inline first** (:func:`procedures.inline_wait.wait_inline`): poll the condition in the task for up to
  ``inline_wait_s`` (:data:`INLINE_WAIT_S`); what finishes that fast never defers;
* **hold the event back** (:func:`not_before`): the trigger yields ``done`` no sooner than
  ``min_defer_s`` (:data:`MIN_DEFER_S`) after the deferral (``not_before`` in
  :mod:`operators.triggers.base`);
* **pause inline when short** (:func:`pause`): a pause between batches shorter than
  ``min_defer_s`` is slept in the task, a longer one defers on a timer that cannot fire early;
* and the DAG gives the step retries (:data:`DEFERRING_RETRIES`), each resuming from ZooKeeper
  and the run folder, for the race that remains.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from airflow.providers.standard.triggers.temporal import TimeDeltaTrigger

INLINE_WAIT_S = 20.0
MIN_DEFER_S = 10.0
DEFERRING_RETRIES = {"retries": 3, "retry_delay": timedelta(seconds=15)}


def not_before(min_defer_s: float = MIN_DEFER_S) -> float:
    """The epoch second before which a trigger deferred now must not yield ``done``."""
    return time.time() + float(min_defer_s)


def pause(operator: Any, seconds: float, method_name: str, min_defer_s: float = MIN_DEFER_S) -> None:
    """Pause ``seconds`` between batches: in the task when shorter than ``min_defer_s``, else defer
    on a timer to ``method_name`` (which then never fires sooner than ``min_defer_s``)."""
    if seconds <= 0:
        return
    operator.log.info("pausing %.1fs before the next batch", seconds)
    if seconds < min_defer_s:
        time.sleep(seconds)
        return
    operator.defer(trigger=TimeDeltaTrigger(timedelta(seconds=seconds)), method_name=method_name)
