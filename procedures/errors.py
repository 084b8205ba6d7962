"""Failures of the procedures, one class per cause, without Airflow.

They subclass :class:`kafka_zk.errors.KafkaZkError` so the CLI, the rehearsal and the reports treat
them like every other refusal; each message names what was found and what to do. The ones no retry
can change (a deadline passed, a stall, a plan that is not the approved one, a wave no window admits)
are :data:`FINAL`: :mod:`operators.errors` gives each an Airflow twin that also fails a task at once
instead of waiting out its retries, and :func:`operators.errors.as_airflow` turns one into its twin.
"""

from __future__ import annotations

from kafka_zk.errors import KafkaZkError


class PlanHashMismatch(KafkaZkError):
    """The plan on disk is not the plan that was approved: re-plan and approve again."""


class WaveTimeout(KafkaZkError):
    """A wave did not finish before its deadline."""


class WaveStalled(KafkaZkError):
    """A wave made no progress for longer than the stall timeout."""


class WaveWaitFailed(KafkaZkError):
    """The wait on a wave failed (ZooKeeper unreachable, progress file unreadable)."""


class OutsideWindow(KafkaZkError):
    """The run may not write now (no maintenance window open, a wave longer than every window, or one
    resumed later than the resume allowance into the opening it waited for)."""


#: the failures a retry cannot change
FINAL: tuple[type[KafkaZkError], ...] = (PlanHashMismatch, WaveTimeout, WaveStalled, OutsideWindow)
