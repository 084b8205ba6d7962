"""An approve task retried after Airflow's human-in-the-loop race takes the answer already given, checked
by every rule as if the lost attempt had handled it; the approval rules' refusals are never retried.

The race itself needs a real scheduler (tests/dags/test_real_airflow_race.py met it: an answer
given within a second of the request failed the approve task with "finished with state success,
but the task instance's state attribute is queued", and the retry asked again, so the run waited
for a second answer nobody would give). Here the retry's side is pinned: the operator runs as try 2
of a task instance whose human-in-the-loop detail (Airflow's record of the answer, read in a task
through its supervisor) is given by the test.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest
from airflow.sdk.api.datamodels._generated import HITLDetailResponse, HITLUser
from airflow.sdk.exceptions import AirflowFailException

from kafka_zk.run_folder import RunFolder
from operators.approval import REQUEST_FILE, PlanApprovalOperator
from operators.errors import ApprovalRefused
from operators.runtime import APPROVED, REJECTED, plan_hash
from spark_jobs.artifacts import write_plan_artifacts
from spark_jobs.kernels.decommission import plan_decommission
from spark_jobs.kernels.waves import WaveLimits, pack_waves
from spark_jobs.summary import build_summary
from spark_jobs.synthetic import synthetic_cluster

DAG_ID, RUN_ID = "decommission_brokers", "manual__2026-11-25T17:42:55+00:00"


@pytest.fixture
def folder(tmp_path: Path) -> RunFolder:
    """A run folder with a small decommission plan in it."""
    folder = RunFolder.for_run(tmp_path, DAG_ID, RUN_ID).ensure()
    snap = synthetic_cluster(6, 3, 2, 6, 3, seed=1)
    plan = plan_decommission(snap, [5], {}, seed=0)
    limits = WaveLimits(max_moves_per_broker=2, throttle_bytes_per_s=10 * 1024 ** 2)
    waves = pack_waves(plan.moves, limits)
    write_plan_artifacts(str(folder.plan_dir), plan, waves, build_summary(snap, plan, waves, limits, {}),
                         10 * 1024 ** 2)
    return folder


def context(folder: RunFolder, try_number: int = 2, conf: dict | None = None) -> dict:
    dag_run = SimpleNamespace(conf=conf or {}, run_type="manual", triggering_user_name="alice")
    ti = SimpleNamespace(id=uuid.uuid4(), try_number=try_number)
    return {"dag_run": dag_run, "run_id": RUN_ID, "dag": SimpleNamespace(dag_id=DAG_ID), "ti": ti}


def operator(folder: RunFolder, answer: HITLDetailResponse | None = None) -> PlanApprovalOperator:
    """The approve step whose task instance Airflow holds ``answer`` for."""
    class Approve(PlanApprovalOperator):
        @staticmethod
        def fetch_response(ti_id):
            if answer is None:
                raise RuntimeError("no HITL detail for this task instance")
            return answer

    return Approve(task_id="approve", run_root=str(folder.root.parents[1]), subject="s", body="b")


def requested(folder: RunFolder, ago: timedelta = timedelta(seconds=5), expiry: timedelta = timedelta(hours=12)) -> datetime:
    """The request the lost try made (its run-folder record); returns when it was made."""
    at = datetime.now(timezone.utc) - ago
    folder.write_json(folder.root / REQUEST_FILE, {"plan_hash": plan_hash(folder.plan_dir), "requested_at": at.isoformat(),
                                                   "expires_at": (at + expiry).isoformat(),
                                                   "expiry_s": expiry.total_seconds(), "triggered_by": "alice"})
    return at


def answer(by: str | None, option: str = "Approve", at: datetime | None = None) -> HITLDetailResponse:
    return HITLDetailResponse(response_received=True, chosen_options=[option], params_input={},
                              responded_at=at or datetime.now(timezone.utc),
                              responded_by_user=HITLUser(id=by, name=by) if by else None)


def test_approve_tasks_have_retries_for_the_race() -> None:
    op = PlanApprovalOperator(task_id="approve", run_root="/r", subject="s", body="b")
    assert op.retries == 2 and op.retry_delay == timedelta(seconds=10)


def test_a_retry_takes_the_approval_already_given_and_records_it(folder: RunFolder) -> None:
    requested(folder)
    operator(folder, answer("bob")).execute(context(folder))
    record = json.loads(folder.approval.read_text())
    assert (record["decision"], record["by"], record["plan_hash"]) == (APPROVED, "bob", plan_hash(folder.plan_dir))


@pytest.mark.parametrize("case", ["approved by the trigger", "approved after the expiry"])
def test_an_answer_already_given_is_checked_by_every_rule(folder: RunFolder, case: str) -> None:
    at = requested(folder, ago=timedelta(hours=2), expiry=timedelta(hours=1))
    given = answer("alice") if case == "approved by the trigger" else answer("bob", at=at + timedelta(hours=1, seconds=1))
    with pytest.raises(ApprovalRefused, match="four-eyes" if "trigger" in case else "expired after 1:00:00") as refused:
        operator(folder, given).execute(context(folder))
    assert isinstance(refused.value, AirflowFailException)          # fails at once: no further retry
    assert json.loads(folder.approval.read_text())["decision"] == REJECTED


@pytest.mark.parametrize("case", ["first try", "no request made", "nobody answered yet"])
def test_nothing_is_taken_when_no_answer_was_given(folder: RunFolder, case: str) -> None:
    given = None if case == "no request made" else HITLDetailResponse(
        response_received=False, chosen_options=None, responded_at=None)
    op = operator(folder, given)
    assert op.answer_already_given(context(folder, try_number=1 if case == "first try" else 2)) is None


def test_refusals_of_the_rules_fail_at_once_without_a_retry(folder: RunFolder) -> None:
    with pytest.raises(ApprovalRefused, match="pre_approved was removed") as refused:
        operator(folder).execute(context(folder, try_number=1, conf={"pre_approved": True}))
    assert isinstance(refused.value, AirflowFailException)
    assert not folder.approval.exists()
