"""WaveDoneSensor: wait (deferred, holding no worker) until one wave of a run is finished.

For DAGs that submit a wave themselves and only need the wait (``reassign_partitions``,
``rollback``); the decommission runbook's executor defers on the same trigger in its own loop.
:meth:`WaveDoneSensor.execute` only defers; the deadline is absolute (now + ``timeout_s`` at the
first execution), so a restarted triggerer keeps the same clock. The wave must be described in
the run folder's ``waves.json`` (:class:`operators.reassignment.waves.WaveBook`).

Failure: ``timeout`` → :class:`WaveTimeout`, ``stalled`` → :class:`WaveStalled`, ``error`` →
:class:`WaveWaitFailed`, each with the trigger's message (partitions still moving).
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any, Sequence

from airflow.sdk import BaseOperator

from operators.errors import WaveStalled, WaveTimeout, WaveWaitFailed
from operators.runtime import run_folder
from operators.deferral import not_before
from operators.triggers.reassignment import WaveDoneTrigger

ERRORS = {"timeout": WaveTimeout, "stalled": WaveStalled, "error": WaveWaitFailed}


def raise_for_event(event: dict[str, Any]) -> dict[str, Any]:
    """The event when the wave is done; otherwise the error its status maps to."""
    status = event.get("status")
    if status == "done":
        return event
    raise ERRORS.get(status, WaveWaitFailed)(str(event.get("message", status)))


class WaveDoneSensor(BaseOperator):
    """Defer until wave ``wave_id`` of this run is finished by the controller."""

    template_fields: Sequence[str] = ("zk_conn_id", "run_root", "wave_id", "timeout_s", "poll_interval_s",
                                      "stall_warning_s", "stall_timeout_s")

    def __init__(self, *, zk_conn_id: str, run_root: str, wave_id: Any, timeout_s: Any = 6 * 3600,
                 poll_interval_s: Any = 5.0, stall_warning_s: Any = None, stall_timeout_s: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.zk_conn_id, self.run_root, self.wave_id = zk_conn_id, run_root, wave_id
        self.timeout_s, self.poll_interval_s = timeout_s, poll_interval_s
        self.stall_warning_s, self.stall_timeout_s = stall_warning_s, stall_timeout_s

    def execute(self, context: Any) -> None:
        deadline = time.time() + float(self.timeout_s)
        self.defer(trigger=WaveDoneTrigger(
            zk_conn_id=self.zk_conn_id, run_id=context["run_id"], wave_id=int(self.wave_id), deadline=deadline,
            run_dir=str(run_folder(context, self.run_root).root), poll_interval=float(self.poll_interval_s),
            stall_warning_s=None if self.stall_warning_s in (None, "", "None") else float(self.stall_warning_s),
            stall_timeout_s=None if self.stall_timeout_s in (None, "", "None") else float(self.stall_timeout_s),
            not_before=not_before()),
            method_name="execute_complete", timeout=timedelta(seconds=float(self.timeout_s) + 60))

    def execute_complete(self, context: Any, event: dict[str, Any]) -> dict[str, Any]:
        return raise_for_event(event)
