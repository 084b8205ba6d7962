"""Every one of the 13 runbooks, run to success on the emulator and read back in Chromium (issue 36):
here the seven data-moving runbooks, the other six in test_ui_every_other_runbook_succeeds_and_says_so
(two files, so two workers run them side by side; :func:`scenarios` lists all 13).

One real Airflow 3.3 (API server, scheduler, DAG processor, triggerer; alice triggers, bob answers)
serves the DAGs of the file; each runbook has a tiny emulated cluster of its own (3-4 brokers, a few 1 MiB
partitions, copying at once) and notifies an SMTP sink. Every run starts at once; bob answers each
approval as it is asked. Once a run has ended, Chromium walks it (tests/dags/runbook_walk.py): the
run's page shows a note that says it succeeded; its last mail says so and links exactly one report,
which answers 200 logged in and 401 without; "Final report" is one click from the report task's
page, "Live progress" one click from the approval, and it says the run finished. Screenshots:
test-artifacts/walk-ok-*.png.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.dags.runbook_walk import ClusterSetup, Scenario, Walk, assignment_json

# a shared 2-core machine: 13 runs through a real Airflow and a browser; see test_ui_trigger_forms for
# why pytest-timeout's thread method
pytestmark = [pytest.mark.airflow, pytest.mark.real_airflow, pytest.mark.timeout(1500, method="thread")]

REPO = Path(__file__).resolve().parents[2]
DAG_IDS = tuple(sorted(p.stem for p in (REPO / "dags").glob("*.py") if p.stem != "__init__"))
R4 = {1: "a", 2: "b", 3: "c", 4: "a"}
R3 = {1: "a", 2: "b", 3: "c"}
ON_123 = {0: [1, 2], 1: [2, 3], 2: [3, 1], 3: [1, 2]}
OK = dict(outcome=r"^succeeded", cause=r"succeeded|finished")
FAST = {"poll_interval_s": 0.3, "rehearse": "off", "throttle_bytes_per_sec": 100 * 1024 ** 2}

CLUSTERS = {
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
    "roll": ClusterSetup(R3, {"t": {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}}, commands=True),
    "delete": ClusterSetup(R3, {"t": ON_123, "old-1": {0: [1, 2]}, "old-2": {0: [2, 3]}}),
    "elect": ClusterSetup(R3, {"t": ON_123}),
}


CLUSTER_OF = {"decommission_brokers": "decom", "add_brokers": "add", "move_topics": "move",
              "change_replication_factor": "crf", "reassign_partitions": "reassign", "rebalance": "rebalance",
              "rollback": "rollback", "stuck_reassignment": "stuck", "topic_changes": "topics",
              "cluster_health": "health", "rolling_restart": "roll", "delete_topics": "delete",
              "preferred_leader_election": "elect"}
MOVING = ("decommission_brokers", "add_brokers", "move_topics", "change_replication_factor", "reassign_partitions",
          "rebalance", "rollback")


def scenarios(walk: Walk) -> list[Scenario]:
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
        Scenario("cluster_health", "success", {"zk_conn_id": c("health")}, "health", has_approval=False, **OK),
        Scenario("rolling_restart", "success",
                 {"zk_conn_id": c("roll"), "brokers": [1, 2], "action": walk.restart_action("roll"),
                  "poll_interval_s": 0.2}, "roll", **OK),
        Scenario("delete_topics", "success", {"zk_conn_id": c("delete"), "topic_regex": "old-.*",
                                              "poll_interval_s": 0.2}, "delete", **OK),
        Scenario("preferred_leader_election", "success", {"zk_conn_id": c("elect"), "topics": ["t"],
                                                          "poll_interval_s": 0.2}, "elect", **OK),
    ]


def walk_to_success(zk_server, tmp_path: Path, dag_ids: tuple[str, ...], prefix: str) -> Walk:
    """Run ``dag_ids`` to success on one Airflow serving them, each on its cluster; the walk, ended."""
    keys = {CLUSTER_OF[d] for d in dag_ids}
    with Walk(zk_server, tmp_path, dag_ids, {k: v for k, v in CLUSTERS.items() if k in keys}, prefix=prefix) as walk:
        runs = scenarios(walk)
        assert sorted({s.dag_id for s in runs}) == sorted(DAG_IDS) and len(DAG_IDS) == 13
        assert {s.dag_id: s.cluster for s in runs} == CLUSTER_OF
        walk.drive([s for s in runs if s.dag_id in dag_ids], timeout=900)
    return walk


def test_every_data_moving_runbook_succeeds_and_the_person_sees_it_on_the_note_the_mail_and_one_click_reports(
        zk_server, tmp_path) -> None:
    walk = walk_to_success(zk_server, tmp_path, MOVING, "walk-ok")
    timings = {k: round(v) for k, v in walk.timings.items()}
    print("timings (s):", timings)
    assert not walk.found, (f"{len(walk.found)} thing(s) a person would see wrong:\n" + "\n".join(walk.found)
                            + f"\ntimings (s): {timings}")
