"""The outcome contract (issue 36): one judge of how a run ended, and the note, notification and
final report rendered from the contract only (no Airflow)."""

from __future__ import annotations

from pathlib import Path

import pytest

from procedures.outcome import render
from procedures.outcome.contract import Outcome, StepFailure, append_failure, judge, read_failures


def _outcome(**changes) -> Outcome:
    values = dict(dag_id="rolling_restart", run_id="manual__1", what="Rolling restart of broker(s) 1, 2, 3",
                  kind="stopped", cause="broker 2: stopped at the registration: broker 2 did not come back in 5 s",
                  written=4, next_step="To resume the roll, clear its roll task.",
                  reports={"final report": "final_report.html", "plan report": "plan_report.html",
                           "live progress": "progress"},
                  summary="STOPPED: 1 of 3 batch(es) done", history=("retried: roll ran 2 times",),
                  failed_steps=("roll",), details_md="## Timeline\n\n| a | b |\n|---|---|\n| 1 | <2> |")
    values.update(changes)
    return Outcome(**values)


def test_a_failure_outcome_without_its_cause_is_refused() -> None:
    with pytest.raises(ValueError, match="needs its cause"):
        _outcome(kind="failed", cause=" ")
    with pytest.raises(ValueError, match="not one of"):
        _outcome(kind="crashed")
    assert _outcome(kind="success", cause="").ok


def test_the_note_names_the_outcome_the_cause_the_writes_and_what_next() -> None:
    lines = render.note(_outcome()).splitlines()
    assert lines[0] == "STOPPED: broker 2: stopped at the registration: broker 2 did not come back in 5 s"
    assert lines[1:3] == ["written: 4 ZooKeeper write(s)", "next: To resume the roll, clear its roll task."]
    assert "retried: roll ran 2 times" in lines
    assert len(render.note(_outcome(cause="x" * 5000))) == render.NOTE_LIMIT


def test_the_notification_body_holds_no_link_and_no_path() -> None:
    said = render.message(_outcome())
    assert said["event"] == "failed" and said["title"].startswith("Rolling restart of broker(s) 1, 2, 3: STOPPED — "
                                                                  "broker 2: stopped at the registration")
    assert "broker 2" in said["body"] and "registration" in said["body"]
    assert "final_report" not in said["body"] and "/" not in said["body"].replace("ZooKeeper write(s)", "")
    assert render.message(_outcome(kind="success", cause=""))["event"] == "finished"


def test_the_final_report_leads_with_the_outcome_and_links_the_other_pages_once() -> None:
    md = render.report_md(_outcome())
    assert md.startswith("# Rolling restart of broker(s) 1, 2, 3 — STOPPED\n\n**Why:** broker 2: stopped at")
    assert md.count("(plan_report.html)") == 1 and md.count("(progress)") == 1 and "(final_report.html)" not in md
    html = render.report_html(_outcome())
    assert '<a href="plan_report.html">plan report</a>' in html and "&lt;2&gt;" in html and "<2>" not in html
    assert "retried: roll ran 2 times" in html


def test_the_contract_round_trips_through_its_file(tmp_path: Path) -> None:
    o = _outcome()
    o.save(tmp_path)
    assert Outcome.load(tmp_path) == o
    assert Outcome.load(tmp_path / "nowhere") is None


def test_judge_puts_an_approval_first_then_the_recorded_cause_then_the_unrecorded_step(tmp_path: Path) -> None:
    rejected = {"decision": "rejected", "by": "bob", "at": "t1", "note": ""}
    missing = StepFailure("set_throttles", "ApprovalMissing", "no approval record for plan abc: approve was "
                          "marked success without an answer", ("ApprovalMissing", "KafkaZkError", "Exception"))
    assert judge(approvals=[rejected], failures=[missing], failed_steps=["set_throttles"]) == \
        ("rejected", "rejected by bob at t1")
    kind, cause = judge(failures=[missing], failed_steps=["set_throttles"])
    assert kind == "refused" and cause.startswith("set_throttles: no approval record for plan abc")
    assert judge(failures=[missing], failed_steps=["set_throttles"], written=3)[0] == "failed"
    stop = StepFailure("roll", "RollStopped", "broker 5 did not come back", ("RollStopped", "Exception"))
    assert judge(failures=[stop], failed_steps=["roll"], cause="broker 5: stopped at the registration") == \
        ("stopped", "broker 5: stopped at the registration")
    assert judge(failed_steps=["plan"])[1].startswith("plan failed without recording why")
    assert judge() == ("success", "")
    append_failure(tmp_path, StepFailure("roll", "RuntimeError", "first try\nsecond line"))
    append_failure(tmp_path, stop)
    [recorded] = read_failures(tmp_path)
    assert recorded == stop and recorded.sentence() == "roll: broker 5 did not come back"
    assert judge(failures=[recorded]) == ("success", "")      # a try since cleared and passed is no cause
