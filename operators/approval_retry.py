"""Approve tasks survive Airflow's human-in-the-loop race: retried, they take the answer already given.

On a real scheduler (Airflow 3.3.2, LocalExecutor), an answer given within about a second of the
request can reach the scheduler before the executor has reported that the waiting attempt exited.
The scheduler re-queues the task for the answer, then reads the stale "success" of the waiting
attempt and fails the task ("finished with state success, but the task instance's state attribute
is queued"); the resumed attempt is refused ("409 TI was not in the running state"), often before
it has read the answer. ``tests/dags/test_real_airflow_race.py`` met it with an approver who
answers at once.

So every approve task has retries, and a retry first reads the answer Airflow holds for this task
instance (the human-in-the-loop detail keeps its id across tries): if someone already answered,
the retry handles that answer exactly as the resumed attempt would have (:meth:`answered`: every
rule checked again, the decision recorded) instead of asking a second time. Refusals of the
approval rules (four eyes, expiry, the removed bypass Param) and a request that timed out fail the
task at once through :class:`~operators.errors.ApprovalRefused`, so a retry never asks again after
a refusal.
"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import timedelta
from typing import Any, Iterator

from airflow.providers.standard.exceptions import HITLTimeoutError
from airflow.providers.standard.operators.hitl import ApprovalOperator

from operators.approval_policy import ApprovalExpired, BypassRefused, FourEyesViolation
from operators.errors import ApprovalRefused

APPROVAL_RETRIES = 2
APPROVAL_RETRY_DELAY = timedelta(seconds=10)


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


def answer_event(response: Any) -> dict[str, Any] | None:
    """The trigger event Airflow's HITL trigger would have sent for ``response`` (a
    ``HITLDetailResponse``), or ``None`` when nobody has answered."""
    if response is None or not getattr(response, "response_received", False) or not response.chosen_options:
        return None
    user = response.responded_by_user
    return {"chosen_options": list(response.chosen_options), "params_input": response.params_input or {},
            "responded_at": response.responded_at,
            "responded_by_user": {"id": user.id, "name": user.name} if user is not None else None,
            "timedout": user is None}


class RetriedApprovalOperator(ApprovalOperator):
    """Airflow's ApprovalOperator with retries that take an answer already given, and refusals that
    fail at once. A subclass asks in :meth:`ask` (ending with ``super().ask``) and checks the
    answer in :meth:`answered` (ending with ``super().answered``)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("retries", APPROVAL_RETRIES)
        kwargs.setdefault("retry_delay", APPROVAL_RETRY_DELAY)
        super().__init__(**kwargs)

    def execute(self, context: Any) -> Any:
        with refusals_fail_the_task():
            event = self.answer_already_given(context)
            if event is not None:
                self.log.info("an earlier try of this task was answered (%s by %s at %s) and lost Airflow's "
                              "human-in-the-loop race: handling that answer, not asking again",
                              event["chosen_options"], event["responded_by_user"], event["responded_at"])
                return self.answered(context, event)
            return self.ask(context)

    def execute_complete(self, context: Any, event: dict[str, Any]) -> Any:
        with refusals_fail_the_task():
            return self.answered(context, event)

    def answer_already_given(self, context: Any) -> dict[str, Any] | None:
        """On a retry, the answer Airflow holds for this task instance, as a trigger event."""
        ti = context.get("ti") or context.get("task_instance")
        if ti is None or int(getattr(ti, "try_number", 1) or 1) <= 1:
            return None
        try:
            response = self.fetch_response(ti.id)
        except Exception as exc:    # no request was ever made for this task instance: ask
            self.log.info("no earlier answer to take (%s): asking", exc)
            return None
        return answer_event(response)

    @staticmethod
    def fetch_response(ti_id: Any) -> Any:
        """Airflow's human-in-the-loop detail of ``ti_id`` (through the task's supervisor)."""
        from airflow.sdk.execution_time.hitl import get_hitl_detail_content_detail

        return get_hitl_detail_content_detail(ti_id=ti_id)

    def ask(self, context: Any) -> Any:
        """Make the human-in-the-loop request (the task waits for the answer)."""
        return ApprovalOperator.execute(self, context)

    def answered(self, context: Any, event: dict[str, Any]) -> Any:
        """Airflow's handling of the answer (Reject skips downstream)."""
        return ApprovalOperator.execute_complete(self, context=context, event=event)
