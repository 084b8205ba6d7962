"""Failures of the Airflow side, one class per cause, beside the operators that raise them.

They subclass :class:`kafka_zk.errors.KafkaZkError` so the CLI and reports treat them like
every other refusal; each message names what was found and what to do. The ones a retry cannot
change (a deadline passed, a stall, a plan that is not the approved one) are also
:class:`AirflowFailException`: a task with retries fails at once on them instead of waiting out
its retries, while a ZooKeeper blip or a lost race with the scheduler is retried. The procedures
(:mod:`procedures.errors`) raise the Airflow-free classes; each twin here subclasses its procedure
class, and :func:`as_airflow` turns a procedure's error into its twin at an operator's edge.
"""

from __future__ import annotations

from airflow.sdk.exceptions import AirflowFailException

from kafka_zk.errors import KafkaZkError
from procedures import errors as procedure


class ApprovalMissing(KafkaZkError, AirflowFailException):
    """No approval record for this run's plan (approve was skipped, rejected or never ran)."""


class ApprovalRefused(KafkaZkError, AirflowFailException):
    """An answer the approval rules refuse (four eyes, expiry, the removed bypass Param): a retry of
    the approve task must not ask again, so the task fails at once."""


class PlanHashMismatch(procedure.PlanHashMismatch, AirflowFailException):
    """The plan on disk is not the plan that was approved: re-plan and approve again."""


class WaveTimeout(procedure.WaveTimeout, AirflowFailException):
    """A wave did not finish before its deadline."""


class WaveStalled(procedure.WaveStalled, AirflowFailException):
    """A wave made no progress for longer than the stall timeout."""


class WaveWaitFailed(procedure.WaveWaitFailed):
    """The wait on a wave failed (ZooKeeper unreachable, progress file unreadable)."""


class VerificationFailed(KafkaZkError):
    """The cluster does not match the plan after execution (replicas or ISR)."""


class DrainIncomplete(KafkaZkError):
    """A removed broker still hosts a replica or leads a partition."""


class RunFailed(KafkaZkError):
    """A step of the run failed; raised by the notify step after reporting, so the run shows failed."""


class RunRejected(KafkaZkError):
    """The plan was rejected by a human; raised by the notify step after reporting, so the run
    does not show as a green success that looks like a finished move (nothing was written)."""


class OutsideWindow(procedure.OutsideWindow, AirflowFailException):
    """The run may not write now (no maintenance window open, a wave longer than every window, or one
    resumed later than the resume allowance into the opening it waited for)."""


_TWINS: dict[type[KafkaZkError], type[KafkaZkError]] = {
    procedure.PlanHashMismatch: PlanHashMismatch, procedure.WaveTimeout: WaveTimeout,
    procedure.WaveStalled: WaveStalled, procedure.WaveWaitFailed: WaveWaitFailed,
    procedure.OutsideWindow: OutsideWindow}


def as_airflow(exc: BaseException) -> BaseException:
    """The Airflow twin of a procedure's error (same message, chained), or ``exc`` itself."""
    twin = _TWINS.get(type(exc))
    if twin is None:
        return exc
    out = twin(*exc.args)
    out.__cause__ = exc
    return out
