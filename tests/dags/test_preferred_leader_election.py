"""preferred_leader_election end to end: real Airflow (dag.test on SQLite), real ZooKeeper, the emulator.

Leadership is moved away the way it happens in production — brokers restarted one after the
other — and the final leaders are read back with plain kazoo. The 1 MB rule is checked twice:
on a synthetic 40,000-partition snapshot (the batching the runbook uses, at the real limit;
one payload would be > 1 MiB), and through the DAG on the emulator with a small byte limit so
that the same code path writes many real batches, each read back from the audit log.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_zk.audit import AuditLog
from kafka_zk.codecs import PreferredElectionRequest, TopicPartition
from tests.dags.conftest import OLD_SERVERS, new_chroot, plain_client, zk_connection

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]
RACKS = {1: "a", 2: "b", 3: "c"}


def rotated(n: int) -> dict[int, list[int]]:
    return {p: [1 + p % 3, 1 + (p + 1) % 3, 1 + (p + 2) % 3] for p in range(n)}


@pytest.fixture
def env(zk_server, tmp_path, zk_via):
    chroot = new_chroot(zk_server)
    cluster = EmulatedCluster(zk_server.connect_string + chroot, ClusterSpec(brokers=RACKS, seed=0)).start()
    zk = plain_client(zk_server, chroot)
    yield cluster, zk_connection(zk_server, chroot, zk_via), zk, tmp_path / "runs"
    zk.stop()
    zk.close()
    cluster.stop()


def restart_two_brokers(cluster: EmulatedCluster, zk) -> None:
    for b in (1, 2):
        cluster.kill_broker(b)
        assert cluster.wait_until(lambda: zk.exists("/controller") is not None, 30)
        cluster.restart_broker(b)
        assert cluster.wait_idle(30)


def leaders(zk, topic: str) -> dict[int, tuple[int, int]]:
    """partition -> (leader, preferred replica), read with plain kazoo."""
    assignment = json.loads(zk.get(f"/brokers/topics/{topic}")[0])["partitions"]
    return {int(p): (json.loads(zk.get(f"/brokers/topics/{topic}/partitions/{p}/state")[0])["leader"], r[0])
            for p, r in assignment.items()}


def run(conn_id: str, run_root: Path, answer: str | None = None, **params):
    from cli.local_run import run_dag

    conf = {"zk_conn_id": conn_id, "run_root": str(run_root), "poll_interval_s": 0.1, **params}
    return run_dag("preferred_leader_election", conf, answer=answer, approver="carol.sre")


def election_writes(run_folder: Path):
    return [r for r in AuditLog.read(run_folder / "audit.jsonl")
            if r.op == "create" and r.path == "/admin/preferred_replica_election"]


@pytest.mark.parametrize("zk_via", OLD_SERVERS, indirect=True)  # its ZooKeeper steps on 3.8, 3.5 and 3.4
def test_election_after_two_restarts_restores_preferred_leaders_in_batches(env):
    cluster, conn_id, zk, run_root = env
    cluster.create_topics({"orders": (rotated(12), None, None), "events": (rotated(6), None, None)})
    restart_two_brokers(cluster, zk)
    moved = [p for t in ("orders", "events") for p, (leader, pref) in leaders(zk, t).items() if leader != pref]
    assert moved, "the restarts should have moved leadership away"
    result = run(conn_id, run_root, answer="Approve", max_batch_partitions=3, pause_between_batches_s=0.2)
    assert result.state == "success", result.task_states
    for t in ("orders", "events"):
        assert all(leader == pref for leader, pref in leaders(zk, t).values()), leaders(zk, t)
    assert zk.exists("/admin/preferred_replica_election") is None
    progress = json.loads((result.run_folder / "election_progress.json").read_text())["batches"]
    writes = election_writes(result.run_folder)
    assert len(writes) == len(progress) >= 2 and all(len(w.after["partitions"]) <= 3 for w in writes)
    assert sum(len(w.after["partitions"]) for w in writes) == len(moved)
    for i in range(len(progress) - 1):  # each batch was written after the previous one was consumed
        assert datetime.fromisoformat(writes[i + 1].time.replace("Z", "+00:00")).timestamp() >= progress[i]["done_at"]
    report = (result.run_folder / "final_report.md").read_text()
    assert "— SUCCEEDED" in report.splitlines()[0] and "approved by carol.sre" in report
    assert "| 1 | yes | 6 |" in report  # broker 1 is preferred for 6 partitions; before/after columns follow


def test_json_file_scope_skips_missing_partitions_and_lists_the_ineligible(env, tmp_path):
    cluster, conn_id, zk, run_root = env
    cluster.create_topics({"orders": (rotated(6), None, None)})
    restart_two_brokers(cluster, zk)
    victim = next(b for b in (3, 2, 1) if b != cluster.controller_id())
    before = leaders(zk, "orders")
    wanted = [p for p, (leader, pref) in before.items() if leader != pref]
    cluster.kill_broker(victim)
    assert cluster.wait_until(lambda: all(l != victim for l, _ in leaders(zk, "orders").values()), 30)
    before = leaders(zk, "orders")
    doc = {"partitions": [{"topic": "orders", "partition": p} for p in sorted(before)] +
           [{"topic": "nope", "partition": 0}]}
    path = tmp_path / "election.json"
    path.write_text(json.dumps(doc))
    result = run(conn_id, run_root, "Approve", path_to_json_file=str(path))
    assert result.state == "success", result.task_states
    after = leaders(zk, "orders")
    for p, (leader, pref) in after.items():
        assert (leader == pref) == (pref != victim), (p, after)
    plan = json.loads((result.run_folder / "plan" / "election_plan.json").read_text())
    assert plan["not_eligible"]["nope:0"] == "partition does not exist"
    assert any(why == f"preferred replica {victim} is not live" for why in plan["not_eligible"].values())
    assert wanted  # leadership had moved before the file was applied


def test_many_partitions_are_split_under_the_znode_limit():
    from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic
    from planning.election import plan_election

    topics = {}
    for t in range(40):
        name = f"very-long-topic-name-for-a-big-cluster-{t:03d}"
        topics[name] = Topic(name, {p: Partition(name, p, (1, 2, 3), leader=2, isr=(1, 2, 3)) for p in range(1000)})
    snap = ClusterSnapshot({b: Broker(b) for b in (1, 2, 3)}, topics)
    everything = PreferredElectionRequest(tuple(p.tp for p in snap.partitions())).encode()
    assert len(everything) > 1_048_576  # what kafka-preferred-replica-election.sh would write in one node
    plan = plan_election(snap, None, 512 * 1024, None)
    assert plan.candidates == 40_000 and len(plan.batches) >= 4
    assert all(len(PreferredElectionRequest(b).encode()) <= 512 * 1024 for b in plan.batches)
    assert list(plan.batch_bytes) == [len(PreferredElectionRequest(b).encode()) for b in plan.batches]
    assert [tp for b in plan.batches for tp in b] == sorted(p.tp for p in snap.partitions())
    capped = plan_election(snap, None, 1_000_000, 7_000)
    assert all(len(b) <= 7_000 for b in capped.batches) and len(capped.batches) == 6


def test_small_byte_limit_writes_many_real_batches_each_under_it(env):
    cluster, conn_id, zk, run_root = env
    cluster.create_topics({f"t{i:02d}": (rotated(30), None, None) for i in range(10)})
    restart_two_brokers(cluster, zk)
    result = run(conn_id, run_root, "Approve", max_batch_bytes=1024, max_batch_partitions=1000)
    assert result.state == "success", result.task_states
    writes = election_writes(result.run_folder)
    sizes = [len(PreferredElectionRequest(tuple(TopicPartition(e["topic"], e["partition"])
                                                for e in w.after["partitions"])).encode()) for w in writes]
    assert len(writes) >= 3 and max(sizes) <= 1024, sizes
    for i in range(10):
        assert all(leader == pref for leader, pref in leaders(zk, f"t{i:02d}").values())


def test_election_trigger_serializes_to_primitives_only():
    from operators.triggers.election import ElectionDoneTrigger

    trigger = ElectionDoneTrigger("zk_x", ["a:0", "b:1"], 1_800_000_000.0, 0.25, 2, not_before=1_799_999_990.0)
    path, kwargs = trigger.serialize()
    assert (path, kwargs) == ("operators.triggers.election.ElectionDoneTrigger", {
        "zk_conn_id": "zk_x", "partitions": ["a:0", "b:1"], "deadline": 1_800_000_000.0, "poll_interval": 0.25,
        "batch": 2, "not_before": 1_799_999_990.0})
    assert ElectionDoneTrigger(**kwargs).serialize() == (path, kwargs)  # what a restarted triggerer rebuilds


def test_dry_run_plans_every_batch_and_writes_nothing(env):
    from tests.zk_helpers import tree

    cluster, conn_id, zk, run_root = env
    cluster.create_topics({"orders": (rotated(6), None, None)})
    restart_two_brokers(cluster, zk)
    before = tree(zk)
    result = run(conn_id, run_root, dry_run=True, max_batch_partitions=1)
    assert result.state == "success", result.task_states
    assert tree(zk) == before
    planned = election_writes(result.run_folder)
    assert planned and all(w.dry_run and len(w.after["partitions"]) == 1 for w in planned)
    assert "dry run" in (result.run_folder / "final_report.md").read_text()
