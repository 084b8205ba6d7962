"""ExecuteWavesOperator: submit the plan's waves one at a time, deferring while each one runs.

The Airflow shell over :class:`procedures.waves.executor.WaveExecutor` (the loop, the window guard,
the resumable book: its module docstring), which returns what to wait for instead of deferring;
here that becomes a deferral — on :class:`WaveDoneTrigger` for a wave (resumed in
:meth:`ExecuteWavesOperator.execute_complete`), on a ``DateTimeTrigger`` for a window's opening
(:meth:`ExecuteWavesOperator.resume_after_window`) — and the seams are Airflow's: the connection's
hook and the run's approval as the session (:meth:`operators.base.RunbookOperator.session`), the
run's notification channels, the configured windows file, ``clock`` (a test may replace it).

A wave submitted or found running is polled in the task for up to ``inline_wait_s`` before
deferring, and the trigger never resumes the task sooner than ``min_defer_s`` after the deferral:
both keep clear of a scheduler race seen on Airflow 3.3.2 (a trigger firing before the executor
reported the deferring attempt's exit gets the resumed task failed, "409 TI was not in the running
state"; :mod:`operators.deferral`). The DAG gives this task retries, and a retry resumes the same
wave (finished → done; in ``/admin/reassign_partitions`` → ours, waited on, never rewritten). In a
dry run every wave's write is planned and audited, nothing is waited on.

Failure: as the core's (:mod:`procedures.waves.executor`), each raised as its Airflow twin
(:func:`operators.errors.as_airflow`): :class:`PlanHashMismatch`, :class:`WaveTimeout`,
:class:`WaveStalled`, :class:`OutsideWindow` fail the task at once; :class:`WaveWaitFailed` is retried.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from datetime import timedelta
from typing import Any, Iterator, Mapping, Sequence

from airflow.providers.standard.triggers.temporal import DateTimeTrigger

from kafka_zk.errors import KafkaZkError
from operators.base import RunbookOperator, as_bool
from operators.deferral import INLINE_WAIT_S, MIN_DEFER_S, not_before
from operators.errors import as_airflow
from operators.hooks.zookeeper import ZooKeeperHook
from operators.notifications.runbook import conn_ids_of, notify_event
from operators.reports.links import PlanReportLink, ProgressLink, RunReportsLink
from operators.runtime import require_approval
from operators.triggers.reassignment import WaveDoneTrigger
from operators.windows.config import configured_windows
from procedures.waves import executor as core
from procedures.waves.executor import AllDone, Seams, Settings, WaitForWave, WaveExecutor, build_wave_book
from procedures.windows.guard import window_gate

__all__ = ["ExecuteWavesOperator", "build_wave_book", "raise_for_event"]


@contextmanager
def _airflow_errors() -> Iterator[None]:
    """A procedure's failure raised as its Airflow twin (the final ones fail the task at once)."""
    try:
        yield
    except KafkaZkError as exc:
        twin = as_airflow(exc)
        if twin is exc:
            raise
        raise twin from exc


def raise_for_event(event: Mapping[str, Any]) -> Mapping[str, Any]:
    """The wave trigger's event when the wave is done; otherwise the (Airflow) error its status maps to."""
    with _airflow_errors():
        return core.raise_for_event(event)


class ExecuteWavesOperator(RunbookOperator):
    """Run every wave of the plan to completion, resumably (see module docstring)."""

    operator_extra_links = (ProgressLink(), PlanReportLink(), RunReportsLink())

    template_fields: Sequence[str] = (*RunbookOperator.template_fields, "throttle_bytes_per_sec",
                                      "wave_timeout_s", "poll_interval_s", "stall_warning_s", "stall_timeout_s",
                                      "broker_logs", "outside_window", "between_windows")
    ui_color = "#cfe2f3"
    #: the clock every wave status change is stamped with (epoch seconds); a test may replace it
    clock = staticmethod(time.time)

    def __init__(self, *, throttle_bytes_per_sec: Any = None, wave_timeout_s: Any = 6 * 3600,
                 poll_interval_s: Any = 5.0, stall_warning_s: Any = None, stall_timeout_s: Any = None,
                 broker_logs: Any = "", inline_wait_s: float = INLINE_WAIT_S, min_defer_s: float = MIN_DEFER_S,
                 outside_window: Any = False, between_windows: Any = "keep", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.inline_wait_s = inline_wait_s
        self.min_defer_s = min_defer_s
        self.throttle_bytes_per_sec = throttle_bytes_per_sec
        self.wave_timeout_s = wave_timeout_s
        self.poll_interval_s = poll_interval_s
        self.stall_warning_s = stall_warning_s
        self.stall_timeout_s = stall_timeout_s
        self.broker_logs = broker_logs   # where the brokers' state-change logs are (procedures/reports/state_change.py)
        self.outside_window = outside_window     # the recorded manual-emergency override of the windows
        self.between_windows = between_windows   # "keep" or "remove" the throttles while waiting for a window

    # -- the core and its seams --------------------------------------------------------------

    def _executor(self, context: Any) -> WaveExecutor:
        def notify(event: str, *, body: str, fields: Mapping[str, Any], outcome: str | None = None) -> None:
            extra = {} if outcome is None else {"outcome": outcome}
            notify_event(context, folder, event, self.log, body=body, fields=fields, **extra)

        folder = self.folder(context)
        settings = Settings.of(context["dag"].dag_id, task_id=self.task_id,
                               throttle_bytes_per_sec=self.throttle_bytes_per_sec, wave_timeout_s=self.wave_timeout_s,
                               poll_interval_s=self.poll_interval_s, stall_warning_s=self.stall_warning_s,
                               stall_timeout_s=self.stall_timeout_s, broker_logs=self.broker_logs,
                               inline_wait_s=self.inline_wait_s, outside_window=as_bool(self.outside_window),
                               between_windows=self.between_windows)
        seams = Seams(session=lambda: self.session(context), clock=lambda: self.clock(), notify=notify,
                      gate=lambda: self._gate(context), log=self.log)
        return WaveExecutor(folder, settings, seams)

    def _gate(self, context: Any):
        return window_gate(configured_windows(in_task=True), str(self.zk_conn_id), context["dag"].dag_id,
                           as_bool(self.outside_window))

    def _go(self, context: Any, step: core.Step) -> dict:
        """Airflow's answer to what the core returned: its result, or a deferral (``defer`` raises)."""
        if isinstance(step, AllDone):
            return step.result
        if isinstance(step, WaitForWave):
            trigger = WaveDoneTrigger(
                zk_conn_id=self.zk_conn_id, run_id=context["run_id"], wave_id=step.wave_id, deadline=step.deadline,
                run_dir=step.run_dir, poll_interval=step.poll_interval, stall_warning_s=step.stall_warning_s,
                stall_timeout_s=step.stall_timeout_s, not_before=not_before(float(self.min_defer_s)),
                throttle_bytes_per_s=step.throttle_bytes_per_s, dag_id=context["dag"].dag_id,
                notify_conn_ids=conn_ids_of(context))
            self.defer(trigger=trigger, method_name="execute_complete",
                       timeout=timedelta(seconds=max(1.0, step.deadline - time.time()) + 60))
        else:                                            # WaitForWindow: until the window opens
            self.defer(trigger=DateTimeTrigger(moment=step.opens), method_name="resume_after_window")
        raise RuntimeError("BaseOperator.defer returned instead of raising TaskDeferred")

    # -- entry points ------------------------------------------------------------------------

    def execute(self, context: Any) -> dict:
        with _airflow_errors():
            executor = self._executor(context)
            if self.is_dry_run:
                return executor.dry_run()
            ZooKeeperHook(self.zk_conn_id).log_dirs_source()   # a malformed log_dirs_source is refused before any write
            record = require_approval(executor.folder)
            step = executor.start(record.plan_hash)
        return self._go(context, step)

    def execute_complete(self, context: Any, event: dict[str, Any]) -> dict:
        with _airflow_errors():
            step = self._executor(context).wave_ended(event)
        return self._go(context, step)

    def resume_after_window(self, context: Any, event: dict[str, Any] | None = None) -> dict:
        """The window the run waited for has opened: re-set throttles if they were removed, go on."""
        with _airflow_errors():
            step = self._executor(context).window_opened()
        return self._go(context, step)
