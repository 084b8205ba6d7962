"""Approve tasks survive Airflow's human-in-the-loop race: an answer is never lost, never asked twice.

On a real scheduler (Airflow 3.3.2, LocalExecutor), an answer that arrives before the waiting
attempt is parked, or before the executor has reported that attempt's exit, resumes the task
while the scheduler still holds the attempt's stale "success"; the scheduler then fails it
("finished with state success, but the task instance's state attribute is queued"). Two forms
were met (``tests/dags/test_real_airflow_race.py``, ``tests/dags/test_real_airflow_answer_before_park.py``):
the resumed attempt handled the answer (recorded it in the run folder) and was then told "409 TI
was not in the running state"; or it was refused before it read the answer, which then lives only
in Airflow's human-in-the-loop detail.

So every approve task has retries, and a retry never asks again for a request that is still open:

* the run folder holds a decision of the same plan or document hash — approved *or rejected* —
  written by the earlier attempt after every rule passed: the retry continues from it (a
  rejection skips downstream again);
* otherwise, when no try has handled an answer to this request yet (:func:`answered_since`), the
  retry reads the answer Airflow holds (:class:`RecordedAnswerTrigger`: a task cannot read its own
  detail, the triggerer can) and handles it as if the waiting attempt had (a task cleared after a
  refusal asks afresh);
* no answer yet: the retry waits on the same request, until the same expiry, without announcing
  it again (one ``approval_requested`` notification per request).

The request is announced (``approval_requested``) only once it exists in Airflow
(:meth:`RetriedApprovalOperator.request`), so a link or a bot acting on the notification finds it.
Refusals of the approval rules (four eyes, expiry, the removed bypass Param) and a request that
timed out fail the task at once through :class:`~operators.errors.ApprovalRefused`, so a retry never
asks again after a refusal. Nothing is written before an approval in any of these cases.
"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Iterator

from airflow.providers.standard.exceptions import HITLTimeoutError
from airflow.providers.standard.operators.hitl import ApprovalOperator

from procedures.approval.policy import ApprovalExpired, BypassRefused, FourEyesViolation
from operators.deferral import not_before
from operators.errors import ApprovalRefused
from operators.triggers.recorded_answer import RecordedAnswerTrigger

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

    # -- the request, the retry ------------------------------------------------------------------

    def request(self, context: Any, announce: Callable[[], None]) -> Any:
        """Write the request, then ``announce`` it (once it exists in Airflow), then wait."""
        self.notifiers = [*self.notifiers, lambda _context: announce()]
        return ApprovalOperator.execute(self, context)

    @staticmethod
    def retrying(context: Any) -> bool:
        """Whether this is a later try of the task (a retry, or a cleared task run again)."""
        ti = context.get("task_instance") or context.get("ti")
        return int(getattr(ti, "try_number", 1) or 1) > 1

    def read_recorded_answer(self, context: Any, expires_at: datetime) -> None:
        """Defer to :class:`RecordedAnswerTrigger` for the answer Airflow holds for this task; the
        task resumes in :meth:`resume_recorded` (never returns)."""
        ti = context.get("task_instance") or context.get("ti")
        self.log.info("a later try with the request still open (until %s): reading the answer Airflow holds "
                      "before asking anyone again (operators/approval/retry.py)", expires_at.isoformat())
        self.defer(trigger=RecordedAnswerTrigger(ti_id=str(ti.id), not_before=not_before()),
                   method_name="resume_recorded", kwargs={"expires_at": expires_at.isoformat()})

    def resume_recorded(self, context: Any, event: dict[str, Any], expires_at: str) -> Any:
        """Handle the answer the earlier try never read, or wait on the same request again."""
        with refusals_fail_the_task():
            if event.get("recorded"):
                user = event.get("responded_by_user") or {}
                self.log.info("answer %s by %s at %s was recorded for the earlier try (lost to Airflow's race): "
                              "handled now, nobody is asked again", event.get("chosen_options"),
                              user.get("name") or user.get("id"), event.get("responded_at"))
                return self.answered(context, recorded_event(event))
            self.log.info("no answer recorded yet (%s): waiting on the same request until %s, not announced again",
                          event.get("why"), expires_at)
            left = datetime.fromisoformat(expires_at) - datetime.now(timezone.utc)
            self.response_timeout = max(left, timedelta(seconds=1))
            return ApprovalOperator.execute(self, context)


def decision_event(option: str, by: str | None, at: str | None) -> dict[str, Any]:
    """An answer event rebuilt from a decision the run folder recorded (to end a retry as that answer did)."""
    return recorded_event({"chosen_options": [option], "responded_at": at,
                           "responded_by_user": {"id": by, "name": by} if by else None})


def expired_event(event: dict[str, Any]) -> bool:
    """Whether Airflow resumed the task because nobody answered before the request's timeout: its
    human-in-the-loop trigger's failure payload with ``error_type`` "timeout" (no defaults are set,
    so an expired request never picks an option)."""
    return "error" in event and event.get("error_type") == "timeout"


def recorded_event(event: dict[str, Any]) -> dict[str, Any]:
    """The trigger's event as the answer event Airflow resumes a task with (``responded_at`` a datetime)."""
    at = event.get("responded_at")
    when = datetime.fromisoformat(str(at).replace("Z", "+00:00")) if at else datetime.now(timezone.utc)
    return {"chosen_options": list(event.get("chosen_options") or []), "params_input": event.get("params_input") or {},
            "responded_at": when if when.tzinfo else when.replace(tzinfo=timezone.utc),
            "responded_by_user": event.get("responded_by_user"), "timedout": False}


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


def answered_since(decided_at: str | None, requested_at: str | None) -> bool:
    """Whether a decision recorded at ``decided_at`` answered the request made at ``requested_at`` (an
    earlier try handled its answer, a refusal included): then a later try asks afresh, never re-reads it."""
    if not decided_at or not requested_at:
        return False
    try:
        decided = datetime.fromisoformat(str(decided_at).replace("Z", "+00:00"))
        requested = datetime.fromisoformat(str(requested_at).replace("Z", "+00:00"))
    except ValueError:
        return False
    utc = timezone.utc
    return (decided if decided.tzinfo else decided.replace(tzinfo=utc)) >= \
        (requested if requested.tzinfo else requested.replace(tzinfo=utc))


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
