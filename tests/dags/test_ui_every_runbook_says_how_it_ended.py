"""Every runbook walked in Chromium through its outcomes, on one real Airflow (issue 36).

Every runbook ``dags/`` defines (listed from the folder, never counted by hand: 14 with broker_configs) runs to success; a
reassignment (move_topics), a batch (delete_topics) and the roll (rolling_restart) are also rejected
by bob, left to expire (their cluster's windows-file entry says ``approval_expires_after: 10s``) and
refused at their first task (a conf key that is no Param: ``skip_approval``); the roll also fails
mid-run (its action exits 1 for broker 2, after broker 1 was restarted).

One real Airflow 3.3 (API server, scheduler, DAG processor, triggerer; alice triggers, bob answers)
serves every DAG for the whole module (:func:`walked`); each runbook's runs have a tiny emulated
cluster (3-4 brokers, a few 1 MiB partitions, copying at once) and notify an SMTP sink. Every run is
triggered at once and the scheduler runs them side by side (one run of a runbook at a time, as its
``max_active_runs=1`` says); bob answers each approval through the REST call the UI makes. Once a run
has ended, Chromium walks it (tests/dags/runbook_walk.py): the note states the outcome and the
cause; the last mail names the cause and links exactly one report, which answers 200 logged in and
401 without; "Final report" is one click from the report task's page, "Live progress" one click
from the approval, and it says the run finished (cluster_health sends no mail by design: none is
asserted). Screenshots: test-artifacts/walk-*.png.

Failure: AssertionError listing, per run, what a person would have seen wrong (a run that did not
end in time with its task states); a runbook in ``dags/`` without a walked success is named.
"""

from __future__ import annotations

import resource
import time
from pathlib import Path
from typing import Iterator

import pytest

from tests.dags.runbook_walk import ClusterSetup, Scenario, Walk, assignment_json

# a shared 2-core machine: every runbook through a real Airflow and a browser; see test_ui_trigger_forms
# for why pytest-timeout's thread method
pytestmark = [pytest.mark.airflow, pytest.mark.real_airflow, pytest.mark.timeout(1500, method="thread")]

REPO = Path(__file__).resolve().parents[2]
DAG_IDS = tuple(sorted(p.stem for p in (REPO / "dags").glob("*.py") if p.stem != "__init__"))
R4 = {1: "a", 2: "b", 3: "c", 4: "a"}
R3 = {1: "a", 2: "b", 3: "c"}
ON_123 = {0: [1, 2], 1: [2, 3], 2: [3, 1], 3: [1, 2]}
RF3 = {"t": {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}}
EXPIRES = "    approval_expires_after: 10s\n"
FAST = {"poll_interval_s": 0.3, "rehearse": "off", "throttle_bytes_per_sec": 100 * 1024 ** 2}

CLUSTERS = {
    # one cluster per runbook's success
    "decom": ClusterSetup(R4, {"t": {0: [1, 4], 1: [4, 2], 2: [3, 4], 3: [2, 3]}}),
    "add": ClusterSetup(R4, {"t": ON_123}),
    "move": ClusterSetup(R4, {"t": ON_123, "keep": {0: [1, 2]}}),
    "crf": ClusterSetup(R3, {"t": ON_123}),
    "reassign": ClusterSetup(R4, {"t": ON_123}),
    "rebalance": ClusterSetup(R4, {"t": {p: [1, 2] for p in range(4)}}),
    "rollback": ClusterSetup(R4, {"t": ON_123}),
    "stuck": ClusterSetup(R3, {"t": ON_123}),
    "topics": ClusterSetup(R3, {"t": ON_123}),
    "health": ClusterSetup(R3, {"t": ON_123}),
    "roll": ClusterSetup(R3, RF3, commands=True),
    "delete": ClusterSetup(R3, {"t": ON_123, "old-1": {0: [1, 2]}, "old-2": {0: [2, 3]}}),
    "elect": ClusterSetup(R3, {"t": ON_123}),
    "configs": ClusterSetup(R3, {"t": ON_123}),
    # the runs that write nothing (reject, expiry, refusal) share one cluster per runbook; the expiry
    # reaches it through a connection whose windows-file entry expires approvals after 10 s
    "move_no": ClusterSetup(R4, {"t": ON_123}),
    "move_exp": ClusterSetup(R4, {}, windows_extra=EXPIRES, same_as="move_no"),
    "delete_no": ClusterSetup(R3, {"t": ON_123, "old-1": {0: [1, 2]}}),
    "delete_exp": ClusterSetup(R3, {}, windows_extra=EXPIRES, same_as="delete_no"),
    "roll_no": ClusterSetup(R3, RF3, commands=True),
    "roll_exp": ClusterSetup(R3, {}, commands=True, windows_extra=EXPIRES, same_as="roll_no"),
    "roll_fail": ClusterSetup(R3, RF3, commands=True),
}

OK = dict(outcome=r"^succeeded", cause=r"succeeded|finished")
REJECTED = dict(answer="Reject", outcome=r"^rejected", cause=r"rejected by bob", state="failed")
EXPIRED = dict(answer=None, outcome=r"^expired", cause=r"approval expired at", state="failed")
REFUSED = dict(answer=None, outcome=r"^refused", cause=r"skip_approval", state="failed", has_approval=False)


def successes(walk: Walk) -> list[Scenario]:
    c = walk.conn
    return [
        Scenario("decommission_brokers", "success", {"zk_conn_id": c("decom"), "brokers_to_remove": [4], **FAST},
                 "decom", **OK),
        Scenario("add_brokers", "success", {"zk_conn_id": c("add"), "new_brokers": [4], **FAST}, "add", **OK),
        Scenario("move_topics", "success", {"zk_conn_id": c("move"), "topics": ["t"], "brokers": [2, 3, 4], **FAST},
                 "move", **OK),
        Scenario("change_replication_factor", "success",
                 {"zk_conn_id": c("crf"), "topics": ["t"], "replication_factor": 3, **FAST}, "crf", **OK),
        Scenario("reassign_partitions", "success",
                 {"zk_conn_id": c("reassign"), "reassignment_json": assignment_json({("t", 0): [3, 4]}), **FAST},
                 "reassign", **OK),
        Scenario("rebalance", "success", {"zk_conn_id": c("rebalance"), "max_replicas_moved": 4, **FAST},
                 "rebalance", **OK),
        Scenario("rollback", "success",
                 {"zk_conn_id": c("rollback"), "rollback_json": assignment_json({("t", 1): [4, 3]}), **FAST},
                 "rollback", **OK),
        Scenario("stuck_reassignment", "success", {"zk_conn_id": c("stuck"), "controller_wait_s": 30,
                                                   "fix_timeout_s": 60}, "stuck", **OK),
        Scenario("topic_changes", "success",
                 {"zk_conn_id": c("topics"), "verify_timeout_s": 60,
                  "spec": "topics:\n  payments:\n    partitions: 2\n    replication_factor: 2\n"}, "topics", **OK),
        # the health check sends nothing (its notify_conn_ids are its proposed runs' channels): no mail asserted
        Scenario("cluster_health", "success", {"zk_conn_id": c("health")}, "health", has_approval=False, mails=False,
                 **OK),
        Scenario("rolling_restart", "success",
                 {"zk_conn_id": c("roll"), "brokers": [1, 2], "action": walk.restart_action("roll"),
                  "poll_interval_s": 0.2}, "roll", **OK),
        Scenario("delete_topics", "success", {"zk_conn_id": c("delete"), "topic_regex": "old-.*",
                                              "poll_interval_s": 0.2}, "delete", **OK),
        Scenario("preferred_leader_election", "success", {"zk_conn_id": c("elect"), "topics": ["t"],
                                                          "poll_interval_s": 0.2}, "elect", **OK),
        Scenario("broker_configs", "success",
                 {"zk_conn_id": c("configs"), "verify_timeout_s": 60,
                  "spec": "brokers:\n  default:\n    set:\n      log.cleaner.threads: \"2\"\n"}, "configs", **OK),
    ]


def other_outcomes(walk: Walk) -> list[Scenario]:
    c = walk.conn
    move = {"topics": ["t"], "brokers": [2, 3, 4], "poll_interval_s": 0.3, "rehearse": "off"}
    delete = {"topic_regex": "old-.*", "poll_interval_s": 0.2}
    roll = {"brokers": [1, 2, 3], "poll_interval_s": 0.2}
    out = []
    for dag_id, key, conf in (("move_topics", "move", move), ("delete_topics", "delete", delete),
                              ("rolling_restart", "roll", roll)):
        def on(conn_key: str) -> dict:
            extra = {"action": walk.restart_action(conn_key)} if dag_id == "rolling_restart" else {}
            return {"zk_conn_id": c(conn_key), **conf, **extra}
        out += [Scenario(dag_id, "reject", on(f"{key}_no"), f"{key}_no", **REJECTED),
                Scenario(dag_id, "expiry", on(f"{key}_exp"), f"{key}_exp", **EXPIRED),
                Scenario(dag_id, "refusal", {**on(f"{key}_no"), "skip_approval": True}, f"{key}_no", **REFUSED)]
    out.append(Scenario("rolling_restart", "failure",
                        {"zk_conn_id": c("roll_fail"), **roll, "action": walk.restart_action("roll_fail", fail_on=2)},
                        "roll_fail", outcome=r"^(failed|stopped)", cause=r"broker 2", state="failed"))
    return out


@pytest.fixture(scope="module")
def walked(zk_server, tmp_path_factory) -> Iterator[tuple[Walk, list[Scenario]]]:
    """One Airflow serving every DAG, every scenario triggered at once and walked; the ended walk."""
    home = tmp_path_factory.mktemp("walk")
    began = time.monotonic()
    with Walk(zk_server, home, DAG_IDS, CLUSTERS, prefix="walk") as walk:
        walk.timings["stack up"] = time.monotonic() - began
        runs = [s for s in successes(walk) if s.dag_id in DAG_IDS] + other_outcomes(walk)
        walk.drive(runs, timeout=900)
    walk.timings["stack down"] = time.monotonic() - began
    cpu = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    timings = {k: round(v) for k, v in walk.timings.items()}
    print("timings (s):", timings, "| CPU s: this process", round(cpu[0].ru_utime + cpu[0].ru_stime),
          "children", round(cpu[1].ru_utime + cpu[1].ru_stime))
    yield walk, runs


def found_for(walk: Walk, runs: list[Scenario]) -> list[str]:
    names = {f"{s.name} (" for s in runs}
    return [f for f in walk.found if any(f.startswith(n) for n in names)]


def test_every_runbook_in_dags_has_a_success_walked() -> None:
    """A runbook added to dags/ (e.g. a 14th) must get its success scenario here, or this fails naming it."""
    class _Conns:
        def conn(self, key: str) -> str:
            return f"zk_{key}"

        def restart_action(self, key: str, fail_on: int | None = None) -> str:
            return "true"
    walked_ids = {s.dag_id for s in successes(_Conns())}          # type: ignore[arg-type]
    assert not set(DAG_IDS) - walked_ids, f"runbook(s) in dags/ with no walked success: {set(DAG_IDS) - walked_ids}"
    assert not walked_ids - set(DAG_IDS), f"walked runbook(s) not in dags/: {walked_ids - set(DAG_IDS)}"
    assert {s.cluster for s in successes(_Conns()) + other_outcomes(_Conns())} <= set(CLUSTERS)  # type: ignore


def test_every_runbook_succeeds_and_the_person_sees_it_on_the_note_the_mail_and_one_click_reports(walked) -> None:
    walk, runs = walked
    ok = [s for s in runs if s.case == "success"]
    assert {s.dag_id for s in ok} == set(DAG_IDS)
    found = found_for(walk, ok)
    assert not found, f"{len(found)} thing(s) a person would see wrong:\n" + "\n".join(found)


def test_rejected_expired_refused_and_failed_runs_say_why_on_the_note_the_mail_and_one_click_reports(walked) -> None:
    walk, runs = walked
    others = [s for s in runs if s.case != "success"]
    assert {(s.dag_id, s.case) for s in others} >= {(d, c) for d in ("move_topics", "delete_topics", "rolling_restart")
                                                    for c in ("reject", "expiry", "refusal")}
    found = found_for(walk, others)
    assert not found, f"{len(found)} thing(s) a person would see wrong:\n" + "\n".join(found)
