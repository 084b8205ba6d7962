"""Approve tasks survive Airflow's human-in-the-loop race: a retry resumes from the recorded answer or asks again.

On a real scheduler (Airflow 3.3.2, LocalExecutor), an answer given within about a second of the
request can reach the scheduler before the executor has reported that the waiting attempt exited.
The scheduler re-queues the task for the answer, then reads the stale "success" of the waiting
attempt and fails it ("finished with state success, but the task instance's state attribute is
queued"). ``tests/dags/test_real_airflow_race.py`` met it with an approver answering at once, in
two forms: the resumed attempt handled the answer (recorded it in the run folder) and was then told
"409 TI was not in the running state"; or it was refused before it read the answer.

So every approve task has retries. A retry (or a cleared task run again) whose run folder already
holds an approval of the same plan or document hash — written by the earlier attempt after every
rule passed, and not past the request's expiry — continues from it. Otherwise the retry asks
again: the answer lost in the second form is held only in Airflow's human-in-the-loop detail,
which a task cannot read (its supervisor refuses the request with "Unhandled request") and which a
new request clears; the approver sees the request again. Refusals of the approval rules (four
eyes, expiry, the removed bypass Param) and a request that timed out fail the task at once through
:class:`~operators.errors.ApprovalRefused`, so a retry never asks again after a refusal. Nothing is
written before an approval in any of these cases.
"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator

from airflow.providers.standard.exceptions import HITLTimeoutError
from airflow.providers.standard.operators.hitl import ApprovalOperator

from procedures.approval.policy import ApprovalExpired, BypassRefused, FourEyesViolation
from operators.errors import ApprovalRefused

APPROVAL_RETRIES = 2
APPROVAL_RETRY_DELAY = timedelta(seconds=10)


class RetriedApprovalOperator(ApprovalOperator):
    """Airflow's ApprovalOperator with retries, whose refusals fail at once. A subclass asks in
    :meth:`ask` (ending with ``super().ask`` or the HITL request) and checks the answer in
    :meth:`answered`; both run inside :func:`refusals_fail_the_task`."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("retries", APPROVAL_RETRIES)
        kwargs.setdefault("retry_delay", APPROVAL_RETRY_DELAY)
        super().__init__(**kwargs)

    def execute(self, context: Any) -> Any:
        with refusals_fail_the_task():
            return self.ask(context)

    def execute_complete(self, context: Any, event: dict[str, Any]) -> Any:
        with refusals_fail_the_task():
            return self.answered(context, event)

    def ask(self, context: Any) -> Any:
        """Make the human-in-the-loop request (the task waits for the answer)."""
        return ApprovalOperator.execute(self, context)

    def answered(self, context: Any, event: dict[str, Any]) -> Any:
        """Airflow's handling of the answer (Reject skips downstream)."""
        return ApprovalOperator.execute_complete(self, context=context, event=event)


@contextmanager
def refusals_fail_the_task() -> Iterator[None]:
    """Re-raise a refusal of the approval rules, or a request that timed out, as
    :class:`ApprovalRefused` (no retry: a retry would ask again and extend the expiry)."""
    try:
        yield
    except (FourEyesViolation, ApprovalExpired, BypassRefused) as refused:
        raise ApprovalRefused(str(refused)) from refused
    except HITLTimeoutError as timed_out:
        raise ApprovalRefused("nobody answered before the approval request expired; nothing was written: "
                              "trigger the run again for a fresh request") from timed_out


def request_still_open(request: dict, now: datetime | None = None) -> bool:
    """Whether an approval request (``requested_at`` + ``expiry_s``) has not expired at ``now``."""
    try:
        requested = datetime.fromisoformat(str(request["requested_at"]).replace("Z", "+00:00"))
        expiry = timedelta(seconds=float(request["expiry_s"]))
    except (KeyError, TypeError, ValueError):
        return False
    if requested.tzinfo is None:
        requested = requested.replace(tzinfo=timezone.utc)
    return (now or datetime.now(timezone.utc)) < requested + expiry
