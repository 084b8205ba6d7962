"""A reassignment, a batch and the roll runbook ended every other way, read back in Chromium (issue 36).

move_topics (the reassignment machine), delete_topics (the batch machine) and rolling_restart are
each rejected by bob, left to expire (their cluster's windows-file entry says
``approval_expires_after: 10s``) and refused at their first task (a conf key that is no Param:
``skip_approval``); the roll also fails mid-run (its action exits 1 for broker 2, after broker 1 was
restarted). One real Airflow serves the three DAGs; every run starts at once on tiny emulated
clusters. Each ended run is walked as in test_ui_every_runbook_succeeds_and_says_so
(tests/dags/runbook_walk.py): the note states the outcome and the cause, the last mail names the
cause and links one served report (200 logged in, 401 without), the final report is one click from
its task's page and live progress one click from the approval. Screenshots: test-artifacts/walk-no-*.png.
"""

from __future__ import annotations

import pytest

from tests.dags.runbook_walk import ClusterSetup, Scenario, Walk

pytestmark = [pytest.mark.airflow, pytest.mark.real_airflow, pytest.mark.timeout(1500, method="thread")]

DAG_IDS = ("delete_topics", "move_topics", "rolling_restart")
R4 = {1: "a", 2: "b", 3: "c", 4: "a"}
R3 = {1: "a", 2: "b", 3: "c"}
ON_123 = {0: [1, 2], 1: [2, 3], 2: [3, 1], 3: [1, 2]}
EXPIRES = "    approval_expires_after: 10s\n"
RF3 = {"t": {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}}

CLUSTERS = {
    "move": ClusterSetup(R4, {"t": ON_123}),
    "move_exp": ClusterSetup(R4, {"t": ON_123}, windows_extra=EXPIRES),
    "delete": ClusterSetup(R3, {"t": ON_123, "old-1": {0: [1, 2]}, "old-2": {0: [2, 3]}}),
    "delete_exp": ClusterSetup(R3, {"t": ON_123, "old-1": {0: [1, 2]}}, windows_extra=EXPIRES),
    "roll": ClusterSetup(R3, RF3, commands=True),
    "roll_exp": ClusterSetup(R3, RF3, commands=True, windows_extra=EXPIRES),
    "roll_fail": ClusterSetup(R3, RF3, commands=True),
}

REJECTED = dict(answer="Reject", outcome=r"^rejected", cause=r"rejected by bob", state="failed")
EXPIRED = dict(answer=None, outcome=r"^(expired|approval expired)", cause=r"approval expired at", state="failed")
REFUSED = dict(answer=None, outcome=r"^refused", cause=r"skip_approval", state="failed", has_approval=False)


def scenarios(walk: Walk) -> list[Scenario]:
    c = walk.conn
    move = {"topics": ["t"], "brokers": [2, 3, 4], "poll_interval_s": 0.3, "rehearse": "off"}
    delete = {"topic_regex": "old-.*", "poll_interval_s": 0.2}
    roll = {"brokers": [1, 2, 3], "poll_interval_s": 0.2}
    out = []
    for dag_id, key, conf in (("move_topics", "move", move), ("delete_topics", "delete", delete),
                              ("rolling_restart", "roll", roll)):
        if dag_id == "rolling_restart":
            conf = {**conf, "action": walk.restart_action(key)}
        out += [Scenario(dag_id, "reject", {"zk_conn_id": c(key), **conf}, key, **REJECTED),
                Scenario(dag_id, "expiry", {"zk_conn_id": c(f"{key}_exp"), **conf,
                                            **({"action": walk.restart_action(f"{key}_exp")} if "action" in conf
                                               else {})}, f"{key}_exp", **EXPIRED),
                Scenario(dag_id, "refusal", {"zk_conn_id": c(key), **conf, "skip_approval": True}, key, **REFUSED)]
    out.append(Scenario("rolling_restart", "failure",
                        {"zk_conn_id": c("roll_fail"), **roll, "action": walk.restart_action("roll_fail", fail_on=2)},
                        "roll_fail", outcome=r"^(failed|stopped)", cause=r"broker 2", state="failed"))
    return out


def test_rejected_expired_refused_and_failed_runs_say_why_on_the_note_the_mail_and_one_click_reports(
        zk_server, tmp_path) -> None:
    with Walk(zk_server, tmp_path, DAG_IDS, CLUSTERS, prefix="walk-no") as walk:
        runs = scenarios(walk)
        walk.drive(runs, timeout=900)
    timings = {k: round(v) for k, v in walk.timings.items()}
    print("timings (s):", timings)
    assert not walk.found, (f"{len(walk.found)} thing(s) a person would see wrong:\n" + "\n".join(walk.found)
                            + f"\ntimings (s): {timings}")
