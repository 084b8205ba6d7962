"""stuck_reassignment end to end (Airflow dag.test, the emulator as a 2.4.1 controller on a real
ZooKeeper), on the two ways a wave gets stuck in production:

(a) a target broker killed for good mid-wave: diagnosed "target broker not registered"; its
    original replicas are all live and in the ISR, so the fix that copies least is chosen: back to
    them (issue 27 item 5: the approval shows both options' bytes, read from the emulator's log
    sizes, and the throttles Kafka's own tool left are listed); after the approved rewrite (delete
    the node, create it with the original replicas, delete /controller) the move is cancelled at
    once, and the throttles Kafka's tool left are removed as their own approved fix (issue 39).
    The original replicas go back in their original order even when the 2.4 controller listed the
    target first ([1,2] → [2,3] leaves [2,3,1]; reverted as [1,2], not [2,1]: issue 39). With an
    original replica out of the ISR the rewrite puts a registered broker in place of the dead one
    instead, and the partition ends on live brokers with a full ISR;
(b) the reassignment node deleted by hand mid-wave and the next wave submitted while the first
    still copies: the running move finishes, but a 2.4.1 controller never saw the new node and
    ignores it until the controller changes (docs/zookeeper.md §2.7.1) — diagnosed "controller not
    acting", and after the approved election the next wave completes.

Also: a rejected fix writes nothing and the run fails as still stuck; a dry run writes nothing and
audits the fix's writes (delete, create, delete /controller); nothing stuck is a no-op.
Final state read with plain kazoo.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pytest

import os

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from tests.dags.conftest import OLD_SERVERS, new_chroot, plain_client, zk_connection
from tests.dags.moving_runbook import zk_writes
from tests.dags.scenario import assignment, audit, data_tree, read, submit_by_hand

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]
DAG_ID = "stuck_reassignment"
BROKERS = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b"}
MIB = 1024 ** 2


@pytest.fixture
def env(zk_server, tmp_path: Path, zk_via) -> Iterator[tuple]:
    chroot = new_chroot(zk_server)
    cluster = EmulatedCluster(zk_server.connect_string + chroot,
                              ClusterSpec(brokers=BROKERS, speed=3600.0, seed=0)).start()
    cluster.create_topics({"t": ({0: [1, 2], 1: [2, 4], 2: [4, 5]}, {0: 50 * MIB, 1: 50 * MIB, 2: 50 * MIB}, None)})
    zk = plain_client(zk_server, chroot)
    yield cluster, zk, zk_connection(zk_server, chroot, zk_via), tmp_path / "runs"
    zk.stop()
    zk.close()
    cluster.stop()


def run(conn_id: str, run_root: Path, task: str, answer: str = "Approve", **params):
    from cli.local_run import run_dag

    return run_dag(DAG_ID, {"zk_conn_id": conn_id, "run_root": str(run_root), "controller_wait_s": 60,
                            "fix_timeout_s": 120, **params}, answer=answer, approval_task=task)


def isr_full(zk, partition: int) -> bool:
    state = read(zk, f"/brokers/topics/t/partitions/{partition}/state")
    return sorted(state["isr"]) == sorted(assignment(zk)[("t", partition)])


def kill_a_target_mid_wave(cluster, zk, target: tuple[int, ...] = (1, 3)) -> None:
    """t-0 moves [1, 2] → ``target``; broker 3 copies nothing (stalled), then dies for good."""
    cluster.stall_replica("t", 0, 3)
    submit_by_hand(zk, [("t", 0, list(target))])
    assert cluster.wait_until(lambda: (read(zk, "/brokers/topics/t") or {}).get("adding_replicas", {}).get("0"), 30)
    cluster.kill_broker(3)
    assert cluster.wait_until(lambda: zk.exists("/brokers/ids/3") is None and zk.exists("/controller"), 30)


def with_log_sizes(conn_id: str, cluster) -> None:
    """The connection reads replica sizes from the emulator (published now, as a running one does)."""
    var = f"AIRFLOW_CONN_{conn_id.upper()}"
    conn = json.loads(os.environ[var])
    conn["extra"]["log_dirs_source"] = "emulator"
    os.environ[var] = json.dumps(conn)
    assert cluster.publish_log_dirs(force=True)


def kafka_tool_throttles(zk) -> None:
    """What ``kafka-reassign-partitions --execute --throttle`` leaves: rates on the brokers of the
    move, throttled-replica lists on the topic (removed only by ``--verify``)."""
    from tests.zk_helpers import set_config_by_hand

    for b in (1, 2, 3):
        set_config_by_hand(zk, f"brokers/{b}", {"leader.replication.throttled.rate": "10485760",
                                                "follower.replication.throttled.rate": "10485760"})
    set_config_by_hand(zk, "topics/t", {"leader.replication.throttled.replicas": "0:1,0:2",
                                        "follower.replication.throttled.replicas": "0:3"})


@pytest.mark.parametrize("zk_via", OLD_SERVERS, indirect=True)  # its ZooKeeper steps on 3.8, 3.5 and 3.4
def test_a_target_broker_killed_for_good_is_reverted_to_its_original_replicas_copying_nothing(env) -> None:
    cluster, zk, conn_id, run_root = env
    kafka_tool_throttles(zk)
    kill_a_target_mid_wave(cluster, zk)
    with_log_sizes(conn_id, cluster)
    result = run(conn_id, run_root, ("approve_rewrite", "approve_throttles"))
    assert result.state == "success", result.task_states
    assert result.task_states["approve_election"] == "skipped" and result.task_states["force_election"] == "skipped"
    diagnosis = json.loads((result.run_folder / "diagnosis.json").read_text())
    [stuck] = diagnosis["partitions"]
    assert stuck["partition"] == "t-0" and stuck["cause"] == "target_not_registered"
    [fix] = diagnosis["fixes"]
    assert fix["chosen"] == "revert" and diagnosis["rewrite"]["t-0"] == [1, 2] == fix["revert"]
    assert fix["revert_bytes"] == 0 and fix["rewrite_bytes"] == 50 * MIB and fix["rewrite"][1] not in (2, 3)
    approval = (result.run_folder / "diagnosis.md").read_text()       # the approval's body shows it
    assert "**revert** → [1, 2] — revert: [1, 2] copies 0 B; rewrite: " in approval
    assert f"{fix['rewrite']} copies 50.0 MiB" in approval
    assert zk.exists("/admin/reassign_partitions") is None
    assert assignment(zk)[("t", 0)] == [1, 2] and isr_full(zk, 0)
    assert not (read(zk, "/brokers/topics/t") or {}).get("adding_replicas")
    writes = [(r["op"], r["path"]) for r in zk_writes(audit(result.run_folder))]
    assert writes[:3] == [("delete", "/admin/reassign_partitions"), ("create", "/admin/reassign_partitions"),
                          ("delete", "/controller")]
    report = (result.run_folder / "final_report.md").read_text()
    assert "rewrite: approved by sre-on-call" in report and "throttles: approved by sre-on-call" in report
    assert "Throttles no runbook run of ours set" in report
    assert "- topic t: follower.replication.throttled.replicas=0:3, leader.replication.throttled.replicas=0:1,0:2" in report
    assert "- broker 2: follower.replication.throttled.rate=10485760, leader.replication.throttled.rate=10485760" in report
    assert_kafka_tool_throttles_removed(zk, writes[3:], report)


def assert_kafka_tool_throttles_removed(zk, writes: list, report: str) -> None:
    """Exactly the keys :func:`kafka_tool_throttles` set are gone (the dead broker 3's too), each
    entity one config write and one change notification; the report says so."""
    assert sorted(p for op, p in writes if not p.startswith("/config/changes/")) == \
        ["/config/brokers/1", "/config/brokers/2", "/config/brokers/3", "/config/topics/t"], writes
    assert sum(p.startswith("/config/changes/") for _, p in writes) == 4, writes
    for entity in ("brokers/1", "brokers/2", "brokers/3", "topics/t"):
        assert not (read(zk, f"/config/{entity}") or {}).get("config"), entity
    assert ("- foreign throttles removed: topic t: follower.replication.throttled.replicas, "
            "leader.replication.throttled.replicas") in report
    assert ("- foreign throttles removed: broker 3: follower.replication.throttled.rate, "
            "leader.replication.throttled.rate") in report


def test_a_foreign_move_listing_its_target_first_is_reverted_in_the_exact_original_order(env) -> None:
    """Issue 39: Kafka's tool moved t-0 [1, 2] → [2, 3] and broker 3 died. A 2.4 controller writes the
    topic znode as [2, 3, 1] (target first), so replicas − adding is [2, 1]; the revert restores [1, 2],
    the order Kafka's tool recorded in the topic's leader throttle list, and says where it came from."""
    cluster, zk, conn_id, run_root = env
    kafka_tool_throttles(zk)
    kill_a_target_mid_wave(cluster, zk, target=(2, 3))
    assert assignment(zk)[("t", 0)] == [2, 3, 1]                # the order the 2.4 controller wrote
    result = run(conn_id, run_root, ("approve_rewrite", "approve_throttles"))
    assert result.state == "success", result.task_states
    diagnosis = json.loads((result.run_folder / "diagnosis.json").read_text())
    [fix] = diagnosis["fixes"]
    assert fix["chosen"] == "revert" and fix["revert"] == [1, 2] == diagnosis["rewrite"]["t-0"]
    assert fix["order_exact"] and fix["order_source"].startswith("the topic's leader.replication.throttled.replicas")
    assert "original order from the topic's leader.replication.throttled.replicas" in \
        (result.run_folder / "diagnosis.md").read_text()
    assert zk.exists("/admin/reassign_partitions") is None
    assert assignment(zk)[("t", 0)] == [1, 2] and isr_full(zk, 0)      # the preferred leader is broker 1 again
    assert read(zk, "/brokers/topics/t/partitions/0/state")["leader"] == 1
    writes = [(r["op"], r["path"]) for r in zk_writes(audit(result.run_folder))]
    assert_kafka_tool_throttles_removed(zk, writes[3:], (result.run_folder / "final_report.md").read_text())


def test_a_target_broker_killed_for_good_with_an_original_out_of_sync_is_rewritten_away(env) -> None:
    cluster, zk, conn_id, run_root = env
    kill_a_target_mid_wave(cluster, zk)
    cluster.stall_replica("t", 0, 2)           # the original follower falls out of the ISR: no revert
    assert cluster.wait_until(lambda: read(zk, "/brokers/topics/t/partitions/0/state")["isr"] == [1], 60)
    result = run(conn_id, run_root, "approve_rewrite")
    cluster.stall_replica("t", 0, 2, stalled=False)
    assert result.state == "success", result.task_states
    diagnosis = json.loads((result.run_folder / "diagnosis.json").read_text())
    [fix] = diagnosis["fixes"]
    assert fix["chosen"] == "rewrite" and fix["revert"] is None and "not in the ISR" in fix["why"]
    new_target = diagnosis["rewrite"]["t-0"]
    assert new_target[0] == 1 and new_target[1] in (2, 4, 5) and BROKERS[new_target[1]] != BROKERS[1]
    assert zk.exists("/admin/reassign_partitions") is None
    assert assignment(zk)[("t", 0)] == new_target and isr_full(zk, 0)
    assert "adding_replicas" not in read(zk, "/brokers/topics/t") or not read(zk, "/brokers/topics/t")["adding_replicas"]
    writes = [(r["op"], r["path"]) for r in zk_writes(audit(result.run_folder))]
    assert writes == [("delete", "/admin/reassign_partitions"), ("create", "/admin/reassign_partitions"),
                      ("delete", "/controller")]
    assert "rewrite: approved by sre-on-call" in (result.run_folder / "final_report.md").read_text()


def test_a_node_deleted_by_hand_mid_wave_leaves_the_next_wave_ignored_until_the_approved_election(env) -> None:
    cluster, zk, conn_id, run_root = env
    cluster.stall_replica("t", 0, 3)
    submit_by_hand(zk, [("t", 0, [1, 3])])                         # wave 1, copying
    assert cluster.wait_until(lambda: (read(zk, "/brokers/topics/t") or {}).get("adding_replicas", {}).get("0"), 30)
    zk.delete("/admin/reassign_partitions")                        # someone deletes the node by hand
    submit_by_hand(zk, [("t", 1, [2, 3])])                         # and submits the next wave: unseen (§2.7.1)
    cluster.stall_replica("t", 0, 3, stalled=False)
    assert cluster.wait_until(lambda: assignment(zk)[("t", 0)] == [1, 3] and isr_full(zk, 0), 60)   # wave 1 ends
    # the next wave never starts (a bounded look: 3 s wall is hours on the emulator's clock)
    assert not cluster.wait_until(lambda: assignment(zk)[("t", 1)] != [2, 4], 3)
    assert zk.exists("/admin/reassign_partitions") is not None
    result = run(conn_id, run_root, "approve_election")
    assert result.state == "success", result.task_states
    assert result.task_states["approve_rewrite"] == "skipped" and result.task_states["rewrite"] == "skipped"
    [stuck] = json.loads((result.run_folder / "diagnosis.json").read_text())["partitions"]
    assert stuck["partition"] == "t-1" and stuck["cause"] == "controller_not_acting"
    assert zk.exists("/admin/reassign_partitions") is None
    assert assignment(zk)[("t", 1)] == [2, 3] and isr_full(zk, 1)
    assert [(r["op"], r["path"]) for r in zk_writes(audit(result.run_folder))] == [("delete", "/controller")]


def test_a_rejected_fix_writes_nothing_and_the_run_fails_as_still_stuck(env) -> None:
    cluster, zk, conn_id, run_root = env
    kill_a_target_mid_wave(cluster, zk)
    before = data_tree(zk)
    result = run(conn_id, run_root, "approve_rewrite", answer="Reject")
    assert result.state == "failed", result.task_states
    assert result.task_states["rewrite"] == "skipped"
    assert not zk_writes(audit(result.run_folder))
    after = data_tree(zk)
    assert after["/admin/reassign_partitions"] == before["/admin/reassign_partitions"]
    assert "rewrite: rejected by" in (result.run_folder / "final_report.md").read_text()


def test_nothing_stuck_is_a_no_op(env) -> None:
    cluster, zk, conn_id, run_root = env
    before = data_tree(zk)
    result = run(conn_id, run_root, "approve_rewrite")
    assert result.state == "success", result.task_states
    assert result.task_states["approve_rewrite"] == "skipped" and result.task_states["approve_election"] == "skipped"
    assert data_tree(zk) == before


def test_a_dry_run_diagnoses_and_audits_the_fix_it_would_write_but_writes_nothing(env) -> None:
    cluster, zk, conn_id, run_root = env
    kill_a_target_mid_wave(cluster, zk)
    before = data_tree(zk)
    result = run(conn_id, run_root, "approve_rewrite", dry_run=True)
    assert result.state == "success", result.task_states
    assert data_tree(zk) == before
    [stuck] = json.loads((result.run_folder / "diagnosis.json").read_text())["partitions"]
    assert stuck["cause"] == "target_not_registered"
    records = zk_writes(audit(result.run_folder))
    assert [(r["op"], r["path"]) for r in records] == [("delete", "/admin/reassign_partitions"),
                                                       ("create", "/admin/reassign_partitions"),
                                                       ("delete", "/controller")]
    assert all(r["dry_run"] for r in records)
    assert "dry run" in (result.run_folder / "final_report.md").read_text()
