"""Honest outcomes in the reports (issue 12 finding 8): a rejection is named with who rejected,
only ZooKeeper writes are counted, unknown sizes are said to be unknown, and a failed run's
report and notification lead with the reason and say when a reassignment is still running.
The outcome, cause and write count come from the outcome contract (issue 36) the reassignment
skeleton's final report fills (:func:`operators.reports.outcome.fill`)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from kafka_zk.audit import AuditLog, AuditRecord
from procedures.run_folder import RunFolder
from operators.approval.step import record_decision
from operators.reports.final import final_values, render
from operators.reports.outcome import Facts, fill
from procedures.outcome import render as said
from operators.runtime import APPROVED, REJECTED, ApprovalRecord


class _TI:
    task_id = "final_report"

    def __init__(self, states: dict[str, str]) -> None:
        self.states = states
        self.pushed: dict[str, object] = {}

    def xcom_push(self, key, value):
        self.pushed[key] = value

    def get_task_states(self, dag_id, run_ids):
        return {run_ids[0]: self.states}


def _context(states: dict[str, str] | None = None) -> dict:
    return {"dag": SimpleNamespace(dag_id="decommission_brokers"), "run_id": "manual__1", "ti": _TI(states or {})}


@pytest.fixture
def folder(tmp_path: Path) -> RunFolder:
    return RunFolder.for_run(tmp_path, "decommission_brokers", "manual__1").ensure()


def test_a_rejection_names_who_and_counts_no_zookeeper_write(folder: RunFolder) -> None:
    record_decision(folder, ApprovalRecord(REJECTED, "abc123", "bob.sre", "2026-11-23T21:00:00Z"), "manual__1",
                    "approve")
    values = final_values(folder, _context(), [6], dry_run=False)
    assert values["outcome"] == "rejected by bob.sre at 2026-11-23T21:00:00Z"
    assert values["writes"] == 0                        # the approval record is a file, not a ZooKeeper write
    md = render("final_report.md.j2", **values)
    assert "ZooKeeper writes: 0 made" in md
    outcome = fill(_context(), folder, Facts(), dry_run=False)
    assert (outcome.kind, outcome.cause, outcome.written) == ("rejected", "rejected by bob.sre at 2026-11-23T21:00:00Z", 0)
    text = said.message(outcome)["body"]
    assert "rejected by bob.sre" in text.splitlines()[0] and "Written: nothing written" in text


def test_an_approval_nobody_answered_reads_as_expired_never_rejected_by_policy(folder: RunFolder) -> None:
    record_decision(folder, ApprovalRecord(REJECTED, "abc123", None, "2026-11-23T21:00:12Z",
                                           "no answer before the approval expired (2026-11-23T21:00:10Z)",
                                           expired=True, expires_at="2026-11-23T21:00:10Z"), "manual__1", "approve")
    values = final_values(folder, _context(), [6], dry_run=False)
    assert values["outcome"] == values["approval_text"] == "approval expired at 2026-11-23T21:00:10Z"
    md = render("final_report.md.j2", **values)
    assert "- Approval: approval expired at 2026-11-23T21:00:10Z" in md and "policy" not in md


def test_zookeeper_writes_are_counted_not_file_records(folder: RunFolder) -> None:
    record_decision(folder, ApprovalRecord(APPROVED, "abc123", "alice", "2026-11-23T21:00:00Z"), "manual__1",
                    "approve")
    log = AuditLog(folder.audit, run_id="manual__1", task="set_throttles")
    log.append(AuditRecord(path="/config/brokers/1", op="set", after={"config": {}}))
    log.append(AuditRecord(path="/config/changes/config_change_", op="create", after={}))
    log.append(AuditRecord(path="/admin/reassign_partitions", op="create", dry_run=True))
    values = final_values(folder, _context(), [6], dry_run=False)
    assert (values["writes"], values["planned_writes"]) == (2, 1)


def test_a_failed_run_leads_with_the_reason_and_says_a_wave_still_runs(folder: RunFolder) -> None:
    folder.write_json(folder.guards, {"ok": False, "problems": ["plan is stale, re-plan: orders-0 moved"]})
    values = final_values(folder, _context({"guards": "failed"}), [6], dry_run=False, reassignment_running=True)
    assert values["outcome"] == "FAILED"
    md = render("final_report.md.j2", **values).splitlines()
    assert any(line.startswith("**A reassignment is still running in Kafka**") for line in md[:6])
    outcome = fill(_context({"guards": "failed"}), folder, Facts(cause=values["reasons"][0]), dry_run=False)
    assert outcome.kind == "failed" and outcome.failed_steps == ("guards",)
    assert outcome.cause.startswith("guards refused the plan: plan is stale, re-plan: orders-0 moved")
    assert said.report_md(outcome).splitlines()[2].startswith("**Why:** guards refused the plan")
    assert "still running in Kafka" in render("final_report.html.j2", **values)


def test_a_failed_step_without_a_file_is_still_named(folder: RunFolder) -> None:
    values = final_values(folder, _context({"execute_waves": "failed"}), [6], dry_run=False,
                          reassignment_running=None)
    assert values["reasons"] == []
    assert "unknown" in render("final_report.md.j2", **values)
    outcome = fill(_context({"execute_waves": "failed"}), folder, Facts(), dry_run=False)
    assert outcome.kind == "failed" and outcome.cause.startswith("execute_waves failed without recording why")


def test_a_wave_that_failed_leads_with_the_cause_the_trigger_named(folder: RunFolder) -> None:
    """Found by the fault campaign (a destination broker killed for good, a replica failing its
    appends): the report said only "wave 1 was submitted and had not finished" while the task log
    named the dead end; the executor now records the trigger's verdict for the report."""
    message = ("wave 1 made no progress for 9s (0/1 done; stopped: topic1-3: destination broker(s) [7] "
               "not registered (no /brokers/ids entry))")
    folder.write_json(folder.wave_failure, {"wave_id": 1, "status": "stalled", "message": message})
    values = final_values(folder, _context({"execute_waves": "failed"}), [6], dry_run=False,
                          reassignment_running=True)
    assert values["reasons"][0] == f"wave 1 stalled: {message}"
    outcome = fill(_context({"execute_waves": "failed"}), folder, Facts(cause=values["reasons"][0]), dry_run=False)
    first = said.note(outcome).splitlines()[0]
    assert first.startswith("FAILED: wave 1 stalled:") and "broker(s) [7] not registered" in first


def _plan(folder: RunFolder, sized: bool) -> None:
    folder.plan_dir.mkdir()
    broker = {"rack": "a", "before": {"replicas": 1, "bytes": 0, "leaders": 1},
              "after": {"replicas": 0, "bytes": 0, "leaders": 0}}
    (folder.plan_dir / "summary.json").write_text(json.dumps({
        "operation": "decommission", "removed_brokers": [6], "brokers": {"6": broker}, "sized": sized,
        "moves": 1, "replica_moves": 1, "bytes_moved": 5 * 2**30 if sized else 0, "waves": 1,
        "predicted_seconds": 128.0 if sized else 0.0, "lower_bound_seconds": 100.0 if sized else 0.0,
        "limits": {"throttle_bytes_per_s": 41943040}}))
    (folder.plan_dir / "waves.json").write_text(json.dumps({"waves": [
        {"index": 0, "partitions": [["t", 0]], "bytes": 0, "busiest_broker": 1, "predicted_seconds": 0.0}]}))
    (folder.plan_dir / "plan.sha256").write_text("f" * 64)


@pytest.mark.parametrize("sized", [False, True])
def test_the_approver_is_told_when_sizes_are_unknown(folder: RunFolder, sized: bool) -> None:
    from operators.reports.final import plan_values

    _plan(folder, sized)
    values = plan_values(folder, _context(), False, None)
    body = render("approval_body.md.j2", zk="zk", report_path="r.html", **values)
    if sized:
        assert "5.0 GiB" in body and "sizes unknown" not in body
    else:
        assert "sizes unknown" in body and "0 B" not in body and "0.0s" not in body
    # the before/after table of the brokers the plan changes
    assert "| 6 (removed) | a | 1 → 0 | 1 → 0 |" in body
    assert ("| 6 (removed) | a | 1 → 0 | 1 → 0 | 0 B → 0 B |" in body) == sized


def test_notify_ends_a_rejected_run_as_rejected_not_success(folder: RunFolder, tmp_path: Path) -> None:
    """The notify step fails with RunRejected after writing the notification, so a rejected run
    is not a green success that looks like a finished move."""
    from operators.errors import RunRejected
    from operators.reports.outcome import OutcomeNotifyOperator

    record_decision(folder, ApprovalRecord(REJECTED, "abc123def456", "bob.sre", "2026-11-23T21:00:00Z"),
                    "manual__1", "approve")
    op = OutcomeNotifyOperator(task_id="notify", zk_conn_id="no_such_connection", run_root=str(tmp_path))
    ti = _TI({})
    ti.task_id = "notify"
    with pytest.raises(RunRejected, match="REJECTED: rejected by bob.sre at 2026-11-23T21:00:00Z; nothing written"):
        op.execute({**_context(), "ti": ti})
    assert "REJECTED" in folder.notification.read_text().splitlines()[0]
    assert ti.pushed["run_note"].splitlines()[:2] == ["REJECTED: rejected by bob.sre at 2026-11-23T21:00:00Z",
                                                      "written: nothing written"]


def test_the_plan_report_and_the_approval_say_what_shaped_the_waves(folder: RunFolder) -> None:
    """Issue 38: no per-broker cap unless a person sets one; the reader is told which limits gave
    the plan its waves (summary.json's ``waves_shaped_by``, planning/kernels/wave_shape.py)."""
    from operators.reports.final import plan_values

    _plan(folder, True)
    summary = json.loads((folder.plan_dir / "summary.json").read_text())
    text = ("3 waves, shaped by bytes: the /admin/reassign_partitions limit (524,288 B) needs 3; "
            "no cap on moves per broker (none set)")
    summary.update(waves=3, waves_shaped_by={"text": text}, partitions_total=1, replica_moves_lower_bound=1,
                   empty_after=[], notes=[], balance_after={"replica_spread": 0, "leader_spread": 0,
                                                            "bytes_relative_spread": 0.0})
    (folder.plan_dir / "summary.json").write_text(json.dumps(summary))
    values = plan_values(folder, _context(), False, None)
    assert f"- waves: {text}\n" in render("approval_body.md.j2", zk="zk", report_path=None, **values)
    assert f"- Waves: **3** — {text}\n" in render("plan_report.md.j2", **values)
    assert f"<li>Waves shaped: {text}</li>" in render("plan_report.html.j2", **values)
