"""RecordedAnswerTrigger: read, once, the human-in-the-loop answer Airflow already holds for a task.

A task cannot read its own human-in-the-loop detail (Airflow 3.3's task supervisor answers that
request with "Unhandled request"); the triggerer can (it serves the same call for Airflow's own
``HITLTrigger``). An approve task retried after Airflow's scheduler race failed the attempt that
waited (:mod:`operators.approval.retry`) defers here before asking again: the answer the person
gave to that attempt is still in the detail, and a new request would clear it.

The event is ``{"recorded": True, "chosen_options", "params_input", "responded_at" (ISO text),
"responded_by_user"}`` when an answer is recorded, else ``{"recorded": False, "why"}`` (no answer
yet, or no detail for this task instance). The event is held back until ``not_before`` (epoch
seconds) so the resumed task does not itself meet the race (:mod:`operators.deferral`).

Failure: none of its own; an error reading the detail is reported as ``recorded: False`` with the
reason, and the task then waits on its request again.
"""

from __future__ import annotations

from typing import Any, AsyncIterator

from asgiref.sync import sync_to_async

from airflow.triggers.base import BaseTrigger, TriggerEvent
from operators.triggers.clock import WALL, Clock


def answer_event(detail: Any) -> dict[str, Any]:
    """The event for one human-in-the-loop detail (Airflow's ``HITLDetailResponse``)."""
    if not (getattr(detail, "response_received", False) and getattr(detail, "chosen_options", None)):
        return {"recorded": False, "why": "no answer recorded yet"}
    user = getattr(detail, "responded_by_user", None)
    at = getattr(detail, "responded_at", None)
    return {"recorded": True, "chosen_options": list(detail.chosen_options),
            "params_input": dict(getattr(detail, "params_input", None) or {}),
            "responded_at": at.isoformat() if hasattr(at, "isoformat") else at,
            "responded_by_user": None if user is None else {"id": str(user.id), "name": str(user.name)}}


class RecordedAnswerTrigger(BaseTrigger):
    """Fire once with the answer recorded for ``ti_id`` (see module docstring)."""

    def __init__(self, ti_id: str, not_before: float | None = None) -> None:
        super().__init__()
        self.ti_id = str(ti_id)
        self.not_before = None if not_before is None else float(not_before)
        self.clock: Clock = WALL   # not serialized: a triggerer always runs on the wall clock

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__name__}", {"ti_id": self.ti_id, "not_before": self.not_before})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        if self.not_before is not None:
            await self.clock.sleep(self.not_before - self.clock.time())
        from uuid import UUID

        from airflow.sdk.execution_time.hitl import get_hitl_detail_content_detail

        try:
            detail = await sync_to_async(get_hitl_detail_content_detail)(ti_id=UUID(self.ti_id))
        except Exception as exc:                  # no detail for this try, or the API did not answer
            yield TriggerEvent({"recorded": False, "why": f"{type(exc).__name__}: {exc}"[:500]})
            return
        yield TriggerEvent(answer_event(detail))
