"""An approve task retried after Airflow's human-in-the-loop race resumes from the recorded answer
(approved or rejected), or reads the answer Airflow holds, and never asks again for an open request;
only a valid answer counts; the approval rules' refusals are never retried.

The race itself needs a real scheduler (tests/dags/test_real_airflow_race.py met it: an answer
given within a second of the request failed the approve task with "finished with state success,
but the task instance's state attribute is queued"). Here the retry's side is pinned: the run
folder holds what the earlier try recorded, and the operator's ``execute`` runs as the retry.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest
from airflow.sdk.exceptions import AirflowFailException, TaskDeferred

from planning.plan_folder.write import write_plan_artifacts
from procedures.run_folder import RunFolder
from operators.approval.retry import answered_since
from operators.approval.step import REQUEST_FILE, PlanApprovalOperator
from operators.errors import ApprovalRefused
from operators.runtime import APPROVED, REJECTED, ApprovalRecord, plan_hash
from operators.triggers.recorded_answer import RecordedAnswerTrigger, answer_event
from planning.kernels.decommission import plan_decommission
from planning.kernels.waves import WaveLimits, pack_waves
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


def context(folder: RunFolder, triggered_by: str = "alice", conf: dict | None = None, try_number: int = 2) -> dict:
    dag_run = SimpleNamespace(conf=conf or {}, run_type="manual", triggering_user_name=triggered_by)
    ti = SimpleNamespace(id="0195a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", try_number=try_number)
    return {"dag_run": dag_run, "run_id": RUN_ID, "dag": SimpleNamespace(dag_id=DAG_ID), "task_instance": ti, "ti": ti}


def operator(folder: RunFolder) -> PlanApprovalOperator:
    return PlanApprovalOperator(task_id="approve", run_root=str(folder.root.parents[1]), subject="s", body="b")


def earlier_try(folder: RunFolder, decision: str = APPROVED, by: str = "bob", digest: str | None = None,
                requested_ago: timedelta = timedelta(seconds=5), expiry: timedelta = timedelta(hours=12)) -> None:
    """What the earlier try wrote: its request, then the answer's record."""
    digest = digest or plan_hash(folder.plan_dir)
    requested = datetime.now(timezone.utc) - requested_ago
    folder.write_json(folder.root / REQUEST_FILE, {"plan_hash": digest, "requested_at": requested.isoformat(),
                                                   "expires_at": (requested + expiry).isoformat(),
                                                   "expiry_s": expiry.total_seconds(), "triggered_by": "alice"})
    folder.write_json(folder.approval, ApprovalRecord(decision, digest, by, requested.isoformat()).to_json())


def test_approve_tasks_have_retries_for_the_race() -> None:
    op = PlanApprovalOperator(task_id="approve", run_root="/r", subject="s", body="b")
    assert op.retries == 2 and op.retry_delay == timedelta(seconds=10)


def test_a_retry_resumes_from_the_approval_the_earlier_try_recorded(folder: RunFolder) -> None:
    earlier_try(folder)
    result = operator(folder).execute(context(folder))
    assert result == {"decision": APPROVED, "plan_hash": plan_hash(folder.plan_dir), "resumed": True}
    assert ApprovalRecord.load(folder).by == "bob"          # the record is the earlier try's, untouched


def test_a_retry_ends_as_the_reject_the_earlier_try_recorded_asking_nobody(folder: RunFolder) -> None:
    earlier_try(folder, decision=REJECTED)
    result = operator(folder).execute(context(folder))
    assert result["chosen_options"] == ["Reject"] and result["responded_by_user"] == {"id": "bob", "name": "bob"}
    assert ApprovalRecord.load(folder).decision == REJECTED and ApprovalRecord.load(folder).by == "bob"
    assert not (folder.root / "notifications.jsonl").exists()        # nobody was asked again


def test_a_retry_with_the_request_open_and_no_answer_recorded_reads_the_answer_airflow_holds(folder: RunFolder) -> None:
    earlier_try(folder)
    folder.approval.unlink()                            # the earlier try never read the answer
    with pytest.raises(TaskDeferred) as deferred:
        operator(folder).execute(context(folder))
    assert isinstance(deferred.value.trigger, RecordedAnswerTrigger)
    assert deferred.value.trigger.ti_id == context(folder)["task_instance"].id
    assert deferred.value.method_name == "resume_recorded"
    assert not (folder.root / "notifications.jsonl").exists()        # not announced again
    assert operator(folder)._earlier_decision(folder, plan_hash(folder.plan_dir), "alice") is None


@pytest.mark.parametrize("option", ["Approve", "Reject"])
def test_the_answer_airflow_held_is_handled_as_the_waiting_try_would_have(folder: RunFolder, option: str) -> None:
    earlier_try(folder)
    folder.approval.unlink()
    at = datetime.now(timezone.utc)
    event = {"recorded": True, "chosen_options": [option], "params_input": {}, "responded_at": at.isoformat(),
             "responded_by_user": {"id": "bob", "name": "bob"}}
    op = operator(folder)
    result = op.resume_recorded(context(folder), event, expires_at=(at + timedelta(hours=1)).isoformat())
    assert result["chosen_options"] == [option]
    record = ApprovalRecord.load(folder)
    assert record.decision == (APPROVED if option == "Approve" else REJECTED) and record.by == "bob"


def test_the_answer_airflow_held_from_the_trigger_is_still_refused_by_four_eyes(folder: RunFolder) -> None:
    earlier_try(folder)
    folder.approval.unlink()
    event = {"recorded": True, "chosen_options": ["Approve"], "params_input": {},
             "responded_at": datetime.now(timezone.utc).isoformat(), "responded_by_user": {"id": "alice", "name": "alice"}}
    with pytest.raises(ApprovalRefused, match="four-eyes"):
        operator(folder).resume_recorded(context(folder), event, expires_at=datetime.now(timezone.utc).isoformat())


def test_the_trigger_event_carries_the_answer_or_says_none_is_recorded() -> None:
    at = datetime(2026, 12, 2, 3, 0, tzinfo=timezone.utc)
    answered = SimpleNamespace(response_received=True, chosen_options=["Reject"], params_input={}, responded_at=at,
                               responded_by_user=SimpleNamespace(id="bob", name="bob"))
    assert answer_event(answered) == {"recorded": True, "chosen_options": ["Reject"], "params_input": {},
                                      "responded_at": at.isoformat(), "responded_by_user": {"id": "bob", "name": "bob"}}
    waiting = SimpleNamespace(response_received=False, chosen_options=None)
    assert answer_event(waiting)["recorded"] is False
    assert RecordedAnswerTrigger("x", 5.0).serialize() == (
        "operators.triggers.recorded_answer.RecordedAnswerTrigger", {"ti_id": "x", "not_before": 5.0})


@pytest.mark.parametrize("case", ["other plan", "expired request", "approved by the trigger"])
def test_a_retry_does_not_resume_from_anything_else(folder: RunFolder, case: str) -> None:
    digest = plan_hash(folder.plan_dir)
    if case == "other plan":
        earlier_try(folder, digest="0" * 64)
    elif case == "expired request":
        earlier_try(folder, requested_ago=timedelta(hours=2), expiry=timedelta(hours=1))
    else:
        earlier_try(folder, by="alice")
    op = operator(folder)
    if case == "approved by the trigger":             # the retry fails at once, asking nobody
        with pytest.raises(ApprovalRefused, match="alice triggered this run and cannot approve it"):
            op.execute(context(folder))
    else:
        assert op._earlier_decision(folder, digest, "alice") is None


def test_refusals_of_the_rules_fail_at_once_without_a_retry(folder: RunFolder) -> None:
    with pytest.raises(ApprovalRefused, match="pre_approved was removed") as refused:
        operator(folder).execute(context(folder, conf={"pre_approved": True}))
    assert isinstance(refused.value, AirflowFailException)
    assert not folder.approval.exists()


def test_an_answer_from_the_trigger_fails_at_once_and_is_recorded_as_refused(folder: RunFolder) -> None:
    digest = plan_hash(folder.plan_dir)
    now = datetime.now(timezone.utc)
    folder.write_json(folder.root / REQUEST_FILE, {"plan_hash": digest, "requested_at": now.isoformat(),
                                                   "expiry_s": 3600, "triggered_by": "alice"})
    event = {"chosen_options": ["Approve"], "params_input": {}, "responded_at": now,
             "responded_by_user": {"id": "alice", "name": "alice"}}
    with pytest.raises(ApprovalRefused, match="four-eyes"):
        operator(folder).execute_complete(context(folder), event)
    record = json.loads(folder.approval.read_text())
    assert record["decision"] == REJECTED and record["by"] == "alice"


def test_a_task_cleared_after_a_refusal_asks_afresh_instead_of_rereading_the_refused_answer(folder: RunFolder) -> None:
    digest = plan_hash(folder.plan_dir)
    earlier_try(folder, by="alice")                      # alice's own Approve, refused and recorded as such
    requested = json.loads((folder.root / REQUEST_FILE).read_text())["requested_at"]
    later = (datetime.fromisoformat(requested) + timedelta(seconds=3)).isoformat()
    folder.write_json(folder.approval, ApprovalRecord(REJECTED, digest, "alice", later,
                                                      "approval refused: alice triggered this run").to_json())
    assert answered_since(later, requested) and not answered_since(None, requested)
    assert not answered_since((datetime.fromisoformat(requested) - timedelta(hours=1)).isoformat(), requested)
    op = operator(folder)
    assert op._earlier_decision(folder, digest, "alice") is None       # a refusal is no person's answer
    with pytest.raises(ImportError, match="SUPERVISOR_COMMS"):   # asks afresh: writes Airflow's request (no
        op.execute(context(folder))                                 # task supervisor here), defers to no trigger


def test_a_change_approval_nobody_answered_is_recorded_and_judged_expired_not_refused(tmp_path: Path) -> None:
    """The roll's (every change document's) approval timing out: EXPIRED in the outcome contract, as the plan
    approval's expiry is, not a refusal of the rules."""
    from operators.approval.change import ChangeApprovalOperator
    from procedures.outcome.contract import approval_outcome, judge

    folder = RunFolder.for_run(tmp_path, "rolling_restart", RUN_ID).ensure()
    folder.write_json(folder.root / "restart_plan.json", {"brokers": [1]})
    requested = datetime(2026, 11, 23, 21, 0, 0, tzinfo=timezone.utc)
    folder.write_json(folder.root / "approval_rolling_restart_request.json", {
        "requested_at": requested.isoformat(), "expiry_s": 10.0, "triggered_by": "alice",
        "document": "restart_plan.json", "document_sha256": "x"})
    op = ChangeApprovalOperator(task_id="approve", name="rolling_restart", document="restart_plan.json",
                                run_root=str(tmp_path), zk_conn_id="zk", subject="s", body="b")
    with pytest.raises(ApprovalRefused, match="expired at 2026-11-23T21:00:10"):
        op.execute_complete({**context(folder), "dag": SimpleNamespace(dag_id="rolling_restart")},
                            {"error": "Response timeout", "error_type": "timeout"})
    record = json.loads((folder.root / "approval_rolling_restart.json").read_text())
    assert record["expired"] is True and record["expires_at"] == "2026-11-23T21:00:10+00:00"
    assert record["decision"] == REJECTED and record["by"] is None
    assert approval_outcome(record) == ("expired", "approval expired at 2026-11-23T21:00:10+00:00")
    assert judge(approvals=[record])[0] == "expired"


def test_a_step_airflow_failed_without_an_error_of_its_own_is_said_so_not_unknown() -> None:
    from procedures.outcome.contract import StepFailure, judge

    kind, cause = judge(failures=[StepFailure("approve", "unknown", "")], failed_steps=["approve"])
    assert kind == "failed" and cause.startswith("approve: failed by Airflow, not by an error of its own")
    assert "unknown" not in cause
