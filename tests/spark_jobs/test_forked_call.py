"""spark_jobs/forked_call.py: a call run in a forked child reports done (with its result) or not; on
"not" the call runs again here, so its own exception is raised in this process (the CLI records
its 1M snapshot.jsonl this way; tests/cli/test_plan_reads.py checks the file)."""

from __future__ import annotations

import os

import pytest

from planning.model import PlanInvalid
from spark_jobs import forked_call


def test_a_passing_check_runs_in_the_child_only() -> None:
    ran: list[int] = []
    pending = forked_call.start(lambda: ran.append(os.getpid()))
    pending.wait()
    assert ran == []                    # the append happened in the child's copy


def test_a_failing_check_raises_its_own_error_here() -> None:
    def check() -> None:
        raise PlanInvalid("decommission", ["a violation", "another"])

    with pytest.raises(PlanInvalid) as caught:
        forked_call.start(check).wait()
    assert caught.value.violations == ["a violation", "another"]


def test_without_fork_the_check_runs_at_wait() -> None:
    ran: list[int] = []
    pending = forked_call.start(lambda: ran.append(1), fork=False)
    assert ran == []
    pending.wait()
    assert ran == [1]


def test_a_result_comes_back_from_the_child_and_a_call_runs_once() -> None:
    ran: list[int] = []

    def call() -> str:
        ran.append(1)
        return f"pid {os.getpid()}"

    forked = forked_call.start(call)
    assert forked.wait() == forked.wait() != f"pid {os.getpid()}" and ran == []
    here = forked_call.start(call, fork=False)
    assert here.wait() == here.wait() == f"pid {os.getpid()}" and ran == [1]

