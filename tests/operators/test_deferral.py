"""The rules that keep deferring steps clear of Airflow 3.3's scheduler race (operators/deferral.py).

A condition already met is found in the task and never deferred on; a trigger deferred on never
yields ``done`` before ``not_before``, whichever trigger it is; a short pause between batches is
slept in the task, a long one defers on a timer. The whole race, on a real scheduler, is pinned by
tests/dags/test_real_airflow_race.py and tests/dags/test_real_airflow_batches.py.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest
from airflow.sdk.exceptions import TaskDeferred
from kazoo.client import KazooClient

from operators.deferral import not_before, pause
from procedures.inline_wait import wait_inline
from operators.triggers.base import ZooKeeperPollTrigger
from operators.triggers.deletion import TopicsDeletedTrigger
from operators.triggers.election import ElectionDoneTrigger
from operators.triggers.janitor import ReassignmentGoneTrigger

HOLD_S = 1.5


def _first_event(trigger: ZooKeeperPollTrigger) -> tuple[dict, float]:
    """The trigger's first event and the epoch second it came."""
    async def go():
        return await anext(trigger.run())
    payload = asyncio.run(asyncio.wait_for(go(), timeout=30)).payload
    return payload, time.time()


def test_wait_inline_returns_as_soon_as_done_and_stops_on_hand_over() -> None:
    seen = iter(["waiting", "waiting", "done", "waiting"])
    calls: list[str] = []

    def poll() -> str:
        calls.append(next(seen))
        return calls[-1]
    assert wait_inline(poll, 30, 0.01) and calls == ["waiting", "waiting", "done"]
    assert not wait_inline(lambda: "hand_over", 30, 0.01)


def test_wait_inline_gives_up_after_its_wait_and_never_past_the_deadline() -> None:
    polls = 0

    def poll() -> str:
        nonlocal polls
        polls += 1
        return "waiting"
    assert not wait_inline(poll, 0.2, 0.05) and polls >= 2
    polls, deadline_passed = 0, time.time() - 1
    assert not wait_inline(poll, 30, 0.05, deadline=deadline_passed) and polls == 1   # one look, no wait


def _factory(kind: str, zk_conn_id: str, tmp_path: Path, hold_until: float | None) -> ZooKeeperPollTrigger:
    """A trigger whose condition is already met when it starts (no such topic, no election node, a
    run folder with no waves)."""
    if kind == "deletion":
        return TopicsDeletedTrigger(zk_conn_id, ["long-gone"], time.time() + 30, 0.1, 0, not_before=hold_until)
    if kind == "election":
        return ElectionDoneTrigger(zk_conn_id, [], time.time() + 30, 0.1, 0, not_before=hold_until)
    return ReassignmentGoneTrigger(zk_conn_id, str(tmp_path), time.time() + 30, 0.1, not_before=hold_until)


@pytest.mark.parametrize("kind", ["deletion", "election", "janitor"])
def test_a_trigger_whose_condition_is_already_met_holds_done_until_not_before(
        kind: str, zk: KazooClient, zk_conn_id: str, tmp_path: Path) -> None:
    zk.ensure_path("/brokers/topics")
    hold_until = not_before(HOLD_S)
    event, at = _first_event(_factory(kind, zk_conn_id, tmp_path, hold_until))
    assert event["status"] == "done" and at >= hold_until
    event, _ = _first_event(_factory(kind, zk_conn_id, tmp_path, None))   # the same trigger without a hold
    assert event["status"] == "done"


class _Deferring:
    """Stands in for an operator: pause() only needs its log and defer()."""

    log = logging.getLogger(__name__)

    def defer(self, *, trigger, method_name):
        raise TaskDeferred(trigger=trigger, method_name=method_name)


def test_a_short_pause_is_slept_in_the_task_and_a_long_one_defers_on_a_timer(monkeypatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr("operators.deferral.time", SimpleNamespace(sleep=slept.append, time=time.time,
                                                                   monotonic=time.monotonic))
    pause(_Deferring(), 0.3, "resume", min_defer_s=10)    # no TaskDeferred: slept here
    assert slept == [0.3]
    before = datetime.now(timezone.utc)
    with pytest.raises(TaskDeferred) as deferred:
        pause(_Deferring(), 12, "resume", min_defer_s=10)
    assert deferred.value.method_name == "resume"
    assert deferred.value.trigger.serialize()[1]["moment"] >= before + timedelta(seconds=12)
