"""Answers Airflow would take silently or refuse without a word are refused in words and recorded on
the run: a late answer to an ended approval (409), the triggerer's own Approve on an assigned request
(403 naming the approvers). Every other answer passes. (The real API server: the expiry test,
tests/dags/test_real_airflow_approval_expiry.py.)"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from procedures.run_folder import RunFolder
from operators.approval.answer_gate import PATH
from procedures.approval.answers import (AnswerFacts, judge_answer, noted, record_refusal, refused_answers,
                                         request_of)
from operators.reports.app import with_refused_answers

NOW = datetime(2026, 12, 2, 4, 0, tzinfo=timezone.utc)
REQUEST = {"requested_at": (NOW - timedelta(hours=13)).isoformat(), "expires_at": (NOW - timedelta(hours=1)).isoformat()}


def facts(**changes) -> AnswerFacts:
    base = dict(user="bob", options=("Approve",), task_state="awaiting_input", responded=False, assignees=(),
                triggered_by="alice", request=REQUEST)
    return AnswerFacts(**{**base, **changes})


def test_a_late_answer_to_an_expired_request_is_refused_as_late_and_ignored() -> None:
    refused = judge_answer(facts(task_state="failed"), NOW)
    assert refused is not None and refused.status == 409 and refused.kind == "late"
    assert f"came late: the request expired at {REQUEST['expires_at']}" in refused.detail
    assert "ignores it and nothing was written" in refused.detail
    assert refused.note == (f"late answer by bob (Approve) at 2026-12-02T04:00:00+00:00, after the request expired at "
                            f"{REQUEST['expires_at']}: ignored, nothing written")


def test_the_triggerers_approve_on_an_assigned_request_is_the_four_eyes_rule_in_words() -> None:
    refused = judge_answer(facts(user="Alice", assignees=("bob", "carol")), NOW)
    assert refused is not None and refused.status == 403 and refused.kind == "four_eyes"
    assert refused.detail.startswith("Alice triggered this run and cannot approve it (four eyes): the approval is "
                                     "assigned to bob, carol; ask one of them")
    assert "tried to approve their own run" in refused.note


@pytest.mark.parametrize("case", [
    dict(),                                                 # an approver, in time
    dict(task_state="failed", responded=True),              # Airflow refuses it itself (409: already answered)
    dict(user="alice", options=("Reject",), assignees=("bob",)),   # rejecting one's own run is no bypass
    dict(user="alice"),                                     # unassigned: the step refuses it (the run fails, noted)
    dict(task_state="up_for_retry"),                        # a retry will read it (operators/approval/retry.py)
])
def test_every_other_answer_passes(case: dict) -> None:
    assert judge_answer(facts(**case), NOW) is None


def test_the_refusal_is_recorded_in_the_run_folder_and_under_the_notes_first_line(tmp_path: Path) -> None:
    folder = RunFolder.for_run(tmp_path, "decommission_brokers", "manual__1").ensure()
    refused = judge_answer(facts(task_state="failed"), NOW)
    record_refusal(folder, refused, facts(task_state="failed"), NOW)
    assert refused_answers(folder) == [{"at": "2026-12-02T04:00:00+00:00", "by": "bob", "options": ["Approve"],
                                        "kind": "late", "why": refused.note}]
    note = noted("approval expired at X: nothing written\nwhy: nobody answered", refused.note)
    assert note.splitlines() == ["approval expired at X: nothing written", refused.note, "why: nobody answered"]
    assert noted(note, refused.note) == note                  # once
    page = with_refused_answers("<html><body><h1>r</h1></body></html>", folder, "final_report.html")
    assert page.endswith('<h2>Answers refused</h2><ul class="refused"><li>' + refused.note + "</li></ul></body></html>")
    assert with_refused_answers("# r\n", folder, "final_report.md") == f"# r\n\n## Answers refused\n\n- {refused.note}\n"
    assert with_refused_answers("x", folder, "plan_report.html") == "x"


def test_the_request_read_is_the_newest_with_its_expiry(tmp_path: Path) -> None:
    folder = RunFolder.for_run(tmp_path, "rolling_restart", "manual__1").ensure()
    folder.write_json(folder.root / "approval_restart_request.json",
                      {"requested_at": "2026-12-02T03:00:00+00:00", "expiry_s": 600})
    assert request_of(folder)["expires_at"] == "2026-12-02T03:10:00+00:00"
    assert request_of(None) == {}


def test_the_gate_watches_only_the_human_in_the_loop_answer_call() -> None:
    m = PATH.match("/api/v2/dags/decommission_brokers/dagRuns/manual__2026-12-02T03:00:00+00:00/taskInstances/"
                   "approve/-1/hitlDetails")
    assert m is not None and m["run_id"] == "manual__2026-12-02T03:00:00+00:00" and m["map_index"] == "-1"
    assert PATH.match("/api/v2/dags/d/dagRuns/r/taskInstances/approve/-1/hitlDetails/tries/1") is None
    assert PATH.match("/api/v2/dags/d/dagRuns/r/taskInstances/approve") is None
