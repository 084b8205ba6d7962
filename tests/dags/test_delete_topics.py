"""delete_topics end to end: real Airflow (dag.test on SQLite), real ZooKeeper, the emulator.

The final state is read back with plain kazoo. Batches not overlapping is checked from the run's
own records against ZooKeeper's: every marker of batch i+1 was created (audit log, in write order)
after the trigger saw every topic of batch i gone, and the markers' creation zxids from the
emulator's journal are not needed: the audit log is written before each create.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_zk.audit import AuditLog
from tests.dags.conftest import OLD_SERVERS, new_chroot, plain_client, zk_connection
from tests.dags.scenario import Env
from tests.zk_helpers import tree

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]
RACKS = {1: "a", 2: "b", 3: "c"}


def make_env(zk_server, tmp_path: Path, via=None, **spec) -> Iterator[Env]:
    chroot = new_chroot(zk_server)
    cluster = EmulatedCluster(zk_server.connect_string + chroot, ClusterSpec(brokers=RACKS, seed=0, **spec)).start()
    zk = plain_client(zk_server, chroot)
    try:
        yield Env(cluster, zk_connection(zk_server, chroot, via), zk, tmp_path / "runs")
    finally:
        zk.stop()
        zk.close()
        cluster.stop()


@pytest.fixture
def env(zk_server, tmp_path, zk_via):
    yield from make_env(zk_server, tmp_path, zk_via)


@pytest.fixture
def env_no_delete(zk_server, tmp_path):
    yield from make_env(zk_server, tmp_path, delete_topic_enable=False)


def run(env: Env, answer: str | None = None, **params):
    from cli.local_run import run_dag

    conf = {"zk_conn_id": env.conn_id, "run_root": str(env.run_root), "poll_interval_s": 0.2, **params}
    return run_dag("delete_topics", conf, answer=answer, approver="bob.sre")


def topics_in_zk(zk) -> set[str]:
    return set(zk.get_children("/brokers/topics"))


@pytest.mark.parametrize("zk_via", OLD_SERVERS, indirect=True)  # its ZooKeeper steps on 3.8, 3.5 and 3.4
def test_deletes_50_topics_matched_by_regex_in_batches_of_10_that_never_overlap(env):
    names = [f"bulk-{i:02d}" for i in range(50)]
    env.cluster.create_topics({n: ({0: [1 + i % 3, 1 + (i + 1) % 3]}, None, {"retention.ms": "1000"})
                               for i, n in enumerate(names)} | {
        "bulk": ({0: [1, 2]}, None, None), "keep": ({0: [2, 3], 1: [3, 1]}, None, None)})
    result = run(env, answer="Approve", topic_regex="bulk-.*", batch_size=10, pause_between_batches_s=0.2)
    assert result.state == "success", result.task_states
    assert result.answered_by == "bob.sre"
    zk = env.zk
    assert topics_in_zk(zk) == {"bulk", "keep"}
    assert set(zk.get_children("/config/topics")) == {"bulk", "keep"}
    assert zk.get_children("/admin/delete_topics") == []
    # batches: 5 of 10, in order, each marked only after the previous one was gone
    progress = json.loads((result.run_folder / "deletion_progress.json").read_text())["batches"]
    assert [b["topics"] for b in progress] == [names[i:i + 10] for i in range(0, 50, 10)]
    assert all(b["state"] == "done" and len(b["marked"]) == 10 for b in progress)
    creates = [r for r in AuditLog.read(result.run_folder / "audit.jsonl") if r.op == "create"]
    assert [r.path.rsplit("/", 1)[1] for r in creates] == names  # each marker written once, in batch order
    for i in range(4):
        done = progress[i]["done_at"]
        nxt = [AuditLog_time(r.time) for r in creates[(i + 1) * 10:(i + 2) * 10]]
        assert min(nxt) >= done, f"batch {i + 2} was marked before batch {i + 1} was gone"
    report = (result.run_folder / "final_report.md").read_text()
    assert "— SUCCEEDED" in report.splitlines()[0] and "approved by bob.sre" in report
    preview = (result.run_folder / "plan_report.md").read_text()
    assert "matched 50 topic(s)" in preview


def AuditLog_time(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def test_delete_topic_enable_false_fails_clearly_instead_of_hanging(env_no_delete):
    env = env_no_delete
    env.cluster.create_topics({"a": ({0: [1, 2]}, None, None), "b": ({0: [2, 3]}, None, None)})
    result = run(env, "Approve", topics=["a", "b"], batch_timeout_s=120)
    assert result.state == "failed"
    assert result.task_states["delete_batches"] == "failed"
    assert result.task_states["notify"] == "failed"  # the report written, notify failed the run from its outcome
    assert topics_in_zk(env.zk) == {"a", "b"}  # the controller dropped the markers, kept the topics
    assert env.zk.get_children("/admin/delete_topics") == []
    [batch] = json.loads((result.run_folder / "deletion_progress.json").read_text())["batches"]
    assert batch["state"] == "failed"
    assert "marked for deletion but not deleted: the brokers probably run with delete.topic.enable=false" \
        in batch["message"]
    assert "delete.topic.enable=false" in (result.run_folder / "final_report.md").read_text()


def test_protected_missing_and_reassigning_topics_are_refused_with_nothing_written(env):
    env.cluster.create_topics({"__consumer_offsets": ({0: [1, 2]}, None, None), "ok": ({0: [1, 2]}, None, None),
                               "moving": ({0: [1, 2]}, None, None)})
    env.zk.create("/admin/reassign_partitions", json.dumps({"version": 1, "partitions": [
        {"topic": "moving", "partition": 0, "replicas": [1, 9]}]}).encode())  # never completes: 9 is not a broker
    assert env.cluster.wait_until(lambda: b"adding_replicas\":{\"0\"" in env.zk.get("/brokers/topics/moving")[0], 30)
    before = tree(env.zk)
    result = run(env, "Approve", topics=["ok", "__consumer_offsets", "nope", "moving"])
    assert result.state == "failed" and result.task_states["select"] == "failed"
    assert result.task_states["delete_batches"] == "upstream_failed"
    assert tree(env.zk) == before
    assert not (result.run_folder / "audit.jsonl").exists()
    report = (result.run_folder / "final_report.md").read_text()
    assert report.startswith("# Delete topics — REFUSED\n\n**Why:** 3 topic(s) refused, nothing written: ")
    assert "- Written: nothing written" in report
    for line in ("`__consumer_offsets` | is a Kafka internal topic", "`nope` | does not exist",
                 "`moving` | has a partition reassignment in progress"):
        assert line in report
    assert "`ok`" not in report.split("## Refused")[1].split("\n\n")[1]


def test_dead_broker_blocks_then_a_rerun_waits_on_the_existing_marker_without_rewriting_it(env):
    victim = next(b for b in (3, 2, 1) if b != env.cluster.controller_id())
    other = next(b for b in (1, 2, 3) if b != victim)
    env.cluster.create_topics({"stuck": ({0: [victim, other]}, None, None)})
    env.cluster.kill_broker(victim)
    first = run(env, "Approve", topics=["stuck"], batch_timeout_s=3)
    assert first.state == "failed" and first.task_states["delete_batches"] == "failed"
    [batch] = json.loads((first.run_folder / "deletion_progress.json").read_text())["batches"]
    assert f"replicas on broker(s) {victim} that are not live" in batch["message"]
    assert env.zk.get_children("/admin/delete_topics") == ["stuck"]

    def restart_once_the_rerun_waits() -> None:  # the broker comes back while the second run waits
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for f in env.run_root.glob("delete_topics/*/deletion_progress.json"):
                if f.parent != first.run_folder and '"submitted"' in f.read_text():
                    env.cluster.restart_broker(victim)
                    return
            time.sleep(0.1)

    helper = threading.Thread(target=restart_once_the_rerun_waits, daemon=True)
    helper.start()
    second = run(env, "Approve", topics=["stuck"], batch_timeout_s=60)
    helper.join(timeout=5)
    assert second.state == "success", second.task_states
    assert "stuck" not in topics_in_zk(env.zk) and env.zk.get_children("/admin/delete_topics") == []
    plan = json.loads((second.run_folder / "plan" / "selection.json").read_text())
    assert plan["already_marked"] == ["stuck"]
    assert not [r for r in AuditLog.read(second.run_folder / "audit.jsonl") if r.op == "create"]


def test_dry_run_writes_nothing_and_plans_every_marker(env):
    env.cluster.create_topics({"t1": ({0: [1, 2]}, None, None), "t2": ({0: [2, 3]}, None, None)})
    before = tree(env.zk)
    result = run(env, dry_run=True, topics=["t1", "t2"], batch_size=1)
    assert result.state == "success", result.task_states
    assert tree(env.zk) == before
    planned = [r for r in AuditLog.read(result.run_folder / "audit.jsonl") if r.op == "create"]
    assert [(r.path, r.dry_run) for r in planned] == [("/admin/delete_topics/t1", True),
                                                      ("/admin/delete_topics/t2", True)]
    assert "dry run" in (result.run_folder / "final_report.md").read_text()


def test_trigger_serializes_to_primitives_only():
    from operators.triggers.deletion import TopicsDeletedTrigger

    trigger = TopicsDeletedTrigger("zk_x", ("a", "b"), 1_800_000_000.5, 0.5, 3, not_before=1_799_999_990.0)
    path, kwargs = trigger.serialize()
    assert (path, kwargs) == ("operators.triggers.deletion.TopicsDeletedTrigger", {
        "zk_conn_id": "zk_x", "topics": ["a", "b"], "deadline": 1_800_000_000.5, "poll_interval": 0.5, "batch": 3,
        "not_before": 1_799_999_990.0})
    assert TopicsDeletedTrigger(**kwargs).serialize() == (path, kwargs)  # what a restarted triggerer rebuilds


def test_select_batches_by_count_and_by_log_bytes():
    from kafka_zk.codecs import TopicPartition
    from kafka_zk.errors import InvalidInput
    from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic
    from planning.topic_deletion import select_topics

    topics = {f"t{i}": Topic(f"t{i}", {0: Partition(f"t{i}", 0, (1, 2), leader=1, isr=(1, 2))}) for i in range(5)}
    snap = ClusterSnapshot({1: Broker(1), 2: Broker(2)}, topics)
    assert select_topics(snap, topic_regex="t.*", batch_size=2).batches == (("t0", "t1"), ("t2", "t3"), ("t4",))
    sizes = {TopicPartition(f"t{i}", 0): 100 * (i + 1) for i in range(5)}  # x2 replicas: 200..1000 bytes
    sel = select_topics(snap, topic_regex="t.*", batch_size=10, max_batch_bytes=600, sizes=sizes)
    assert sel.batches == (("t0", "t1"), ("t2",), ("t3",), ("t4",))  # 200+400, 600, 800 (alone), 1000 (alone)
    internal = ClusterSnapshot(snap.brokers, {**topics, "__consumer_offsets": Topic("__consumer_offsets", {})})
    assert "__consumer_offsets" in select_topics(internal, topics=["__consumer_offsets"]).refused
    assert select_topics(internal, topics=["__consumer_offsets"], allow_internal=True).batches == (
        ("__consumer_offsets",),)
    with pytest.raises(InvalidInput, match="needs partition sizes"):
        select_topics(snap, topics=["t0"], max_batch_bytes=10)
    with pytest.raises(InvalidInput, match="not a valid regular expression"):
        select_topics(snap, topic_regex="t(")
    with pytest.raises(InvalidInput, match="give topics"):
        select_topics(snap)


def test_rejected_approval_writes_nothing_and_reports_the_rejection(env):
    env.cluster.create_topics({"t1": ({0: [1, 2]}, None, None)})
    before = tree(env.zk)
    result = run(env, answer="Reject", topics=["t1"])
    assert result.task_states["approve"] == "success" and result.task_states["delete_batches"] == "skipped"
    assert tree(env.zk) == before
    assert "**Why:** rejected by bob.sre at " in (result.run_folder / "final_report.md").read_text()
