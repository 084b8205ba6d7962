"""The approval cannot be bypassed: only a scheduled run, inside a window, within the caps, with a
rehearsed plan, skips the human; the approver is never the trigger; late answers are refused."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from procedures.approval.policy import (ApprovalExpired, ApprovalFacts, BypassRefused, FourEyesViolation,
                                       check_no_bypass_param, check_not_expired, check_responder, policy_decision)
from procedures.windows.spec import parse_windows_text

FILE = """\
clusters:
  prod:
    windows:
      - name: night
        start: "0 1 * * *"
        duration: 4h
        timezone: UTC
        runbooks: ["*"]
    pre_approval:
      runbooks: [preferred_leader_election, decommission_brokers]
      max_replicas_moved: 100
      max_bytes_moved: 10GiB
"""
WINDOWS = parse_windows_text(FILE, "w.yaml")
OK = ApprovalFacts(runbook="decommission_brokers", conn_id="prod", run_type="scheduled",
                   now=datetime(2026, 1, 6, 2, tzinfo=timezone.utc), plan_hash="ab" * 32, replicas_moved=40,
                   bytes_moved=1 << 30, rehearsal_hashes=frozenset({"ab" * 32}))


def test_a_scheduled_rehearsed_small_plan_in_a_window_skips_the_human_and_names_the_policy():
    d = policy_decision(WINDOWS, OK)
    assert d.skip_human, d.reasons
    assert d.policy == f"w.yaml sha256:{WINDOWS.sha256}" and "window night" in d.text


@pytest.mark.parametrize("change,reason", [
    (dict(run_type="manual"), "manual run is never pre-approved"),
    (dict(runbook="delete_topics"), "does not name delete_topics"),
    (dict(now=datetime(2026, 1, 6, 12, tzinfo=timezone.utc)), "no window admitting"),
    (dict(replicas_moved=101), "exceed the cap of 100"),
    (dict(bytes_moved=(10 << 30) + 1), "bytes moved exceed"),
    (dict(bytes_moved=None), "sizes are unknown"),
    (dict(rehearsal_hashes=frozenset()), "requires a rehearsal"),
    (dict(conn_id="staging"), "no pre_approval policy for staging"),
])
def test_every_missing_condition_keeps_the_human_and_says_why(change, reason):
    d = policy_decision(WINDOWS, replace(OK, **change))
    assert not d.skip_human and reason in d.text, d.text


def test_without_a_windows_file_nothing_is_pre_approved():
    assert not policy_decision(None, OK).skip_human


def test_the_trigger_cannot_approve_their_own_run():
    with pytest.raises(FourEyesViolation, match="alice triggered this run and cannot approve it"):
        check_responder("alice", "Alice")
    check_responder("alice", "bob")


def test_an_answer_after_expiry_is_refused():
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    check_not_expired(t0, t0 + timedelta(minutes=59), timedelta(hours=1))
    with pytest.raises(ApprovalExpired, match="expired after 1 h;"):
        check_not_expired(t0, t0 + timedelta(minutes=61), timedelta(hours=1))


def test_the_old_pre_approved_param_is_refused():
    with pytest.raises(BypassRefused, match="pre_approved was removed"):
        check_no_bypass_param({"pre_approved": False})
    check_no_bypass_param({"brokers_to_remove": [4]})
