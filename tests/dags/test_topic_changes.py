"""topic_changes end to end (Airflow dag.test, the emulator as a 2.4 controller on a real ZooKeeper).

A spec creating two topics, growing one and changing configs of another is applied exactly (read
back with plain kazoo: topic and partition nodes, leaders, config overrides); a second run is a
no-op (no approval asked, nothing written). Also: dry run and rejection write nothing; a spec
that became stale between diff and apply is refused; a table of malformed specs, each refused
with its line and fix before anything is written; a run through the 3.5/3.4 proxies.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Iterator

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from tests.dags.conftest import new_chroot, plain_client, zk_connection
from tests.dags.moving_runbook import zk_writes
from tests.dags.scenario import audit, config, data_tree, read

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]
DAG_ID = "topic_changes"
BROKERS = {1: "a", 2: "b", 3: "c"}
SPEC = """topics:
  payments:
    partitions: 6
    replication_factor: 3
    configs:
      retention.ms: "86400000"
  audit-log:
    partitions: 2
    replication_factor: 2
  orders:
    partitions: 4
  events:
    configs:
      retention.ms: "3600000"
      cleanup.policy: compact
"""


@pytest.fixture
def env(zk_server, tmp_path: Path, zk_via) -> Iterator[tuple]:
    chroot = new_chroot(zk_server)
    cluster = EmulatedCluster(zk_server.connect_string + chroot, ClusterSpec(brokers=BROKERS, speed=3600.0,
                                                                             seed=0)).start()
    cluster.create_topics({"orders": ({0: [1, 2], 1: [2, 3]}, None, None),
                           "events": ({0: [1, 2, 3]}, None, {"retention.ms": "1000"})})
    zk = plain_client(zk_server, chroot)
    yield cluster, zk, zk_connection(zk_server, chroot, zk_via), tmp_path / "runs"
    zk.stop()
    zk.close()
    cluster.stop()


def run(conn_id: str, run_root: Path, spec: str = SPEC, answer: str | None = "Approve", **params):
    from cli.local_run import run_dag

    return run_dag(DAG_ID, {"zk_conn_id": conn_id, "run_root": str(run_root), "spec": spec,
                            "verify_timeout_s": 60, **params}, answer=answer)


def partitions(zk, topic: str) -> dict[str, list[int]]:
    return read(zk, f"/brokers/topics/{topic}")["partitions"]


def assert_applied(zk) -> None:
    assert sorted(partitions(zk, "payments")) == [str(p) for p in range(6)]
    assert all(len(r) == 3 and len(set(r)) == 3 for r in partitions(zk, "payments").values())
    assert sorted(partitions(zk, "audit-log")) == ["0", "1"] and all(len(r) == 2 for r in
                                                                     partitions(zk, "audit-log").values())
    assert sorted(partitions(zk, "orders")) == ["0", "1", "2", "3"]
    assert partitions(zk, "orders")["0"] == [1, 2] and partitions(zk, "orders")["1"] == [2, 3]   # untouched
    for topic, count in (("payments", 6), ("audit-log", 2), ("orders", 4)):
        for p in range(count):
            assert read(zk, f"/brokers/topics/{topic}/partitions/{p}/state")["leader"] in BROKERS, (topic, p)
    assert config(zk, "topics", "payments") == {"retention.ms": "86400000"}
    assert config(zk, "topics", "events") == {"retention.ms": "3600000", "cleanup.policy": "compact"}


@pytest.mark.parametrize("zk_via", ["3.8", "3.5", "3.4"], indirect=True)
def test_the_spec_is_applied_exactly_and_a_second_run_is_a_no_op(env) -> None:
    cluster, zk, conn_id, run_root = env
    first = run(conn_id, run_root)
    assert first.state == "success", first.task_states
    assert_applied(zk)
    diff = json.loads((first.run_folder / "topic_diff.json").read_text())
    assert [c["topic"] for c in diff["create"]] == ["payments", "audit-log"]
    assert diff["grow"] == [{"topic": "orders", "from": 2, "to": 4}]
    assert [c["topic"] for c in diff["configs"]] == ["events"]
    assert json.loads((first.run_folder / "approval_topic_changes.json").read_text())["decision"] == "approved"
    assert cluster.wait_idle(30)
    before = data_tree(zk)
    second = run(conn_id, run_root, answer=None)
    assert second.state == "success", second.task_states
    assert second.task_states["approve"] == "skipped"
    assert not zk_writes(audit(second.run_folder))
    assert data_tree(zk) == before
    assert "Nothing to change" in (second.run_folder / "final_report.md").read_text()


def test_dry_run_and_rejection_write_nothing(env) -> None:
    cluster, zk, conn_id, run_root = env
    before = data_tree(zk)
    dry = run(conn_id, run_root, answer=None, dry_run=True)
    assert dry.state == "success", dry.task_states
    planned = zk_writes(audit(dry.run_folder))
    assert planned and all(r["dry_run"] for r in planned)
    assert data_tree(zk) == before
    rejected = run(conn_id, run_root, answer="Reject")
    assert rejected.task_states["apply"] == "skipped", rejected.task_states
    assert not zk_writes(audit(rejected.run_folder))
    assert data_tree(zk) == before


def test_a_diff_that_went_stale_before_apply_is_refused(env) -> None:
    """While the approval waits, someone grows orders by hand: the approved diff no longer holds."""
    cluster, zk, conn_id, run_root = env
    done = threading.Event()

    def grow_by_hand() -> None:
        while not done.is_set():
            if list(run_root.glob(f"{DAG_ID}/*/approval_topic_changes_request.json")):
                doc = read(zk, "/brokers/topics/orders")
                doc["partitions"]["2"] = [3, 1]
                zk.set("/brokers/topics/orders", json.dumps(doc).encode())
                return
            done.wait(0.2)

    grower = threading.Thread(target=grow_by_hand, daemon=True)
    grower.start()
    try:
        result = run(conn_id, run_root, answer="Approve")
    finally:
        done.set()
        grower.join(timeout=10)
    assert result.state == "failed" and result.task_states["apply"] == "failed", result.task_states
    assert not zk_writes(audit(result.run_folder))
    assert zk.exists("/brokers/topics/payments") is None


MALFORMED = [
    ("empty", "# nothing here\n", 1, "the spec is empty"),
    ("not yaml", "topics:\n  a: [\n", 3, "not valid YAML"),
    ("no topics key", "topic:\n  a: {}\n", 1, "unknown key 'topic'"),
    ("topics empty", "topics: {}\n", 1, "'topics' is empty"),
    ("bad topic name", "topics:\n  'a b':\n    partitions: 1\n", 3, "characters other than ASCII alphanumerics"),
    ("unknown key", "topics:\n  a:\n    partitons: 3\n", 3, "unknown key 'partitons'"),
    ("zero partitions", "topics:\n  a:\n    partitions: 0\n    replication_factor: 1\n", 3, "not a whole number"),
    ("rf text", "topics:\n  a:\n    partitions: 1\n    replication_factor: three\n", 4, "not a whole number"),
    ("unknown config", "topics:\n  a:\n    configs:\n      retention.mss: 5\n", 4, "Unknown topic config name"),
    ("bad config value", "topics:\n  a:\n    configs:\n      cleanup.policy: shred\n", 4, "cleanup.policy"),
    ("delete and configure", "topics:\n  a:\n    delete: true\n    partitions: 3\n", 3, "also configured"),
    ("delete not boolean", "topics:\n  a:\n    delete: maybe\n", 3, "true or false"),
    ("topic says nothing", "topics:\n  a: {}\n", 2, "says nothing"),
    ("duplicate topic", "topics:\n  a:\n    partitions: 1\n  a:\n    partitions: 2\n", 4, "appears twice"),
]


@pytest.mark.parametrize("case,spec,line,words", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_spec_is_refused_with_line_and_fix_before_any_write(env, capfd, case, spec, line, words) -> None:
    cluster, zk, conn_id, run_root = env
    before = data_tree(zk)
    result = run(conn_id, run_root, spec=spec, answer=None)
    assert result.state == "failed" and result.task_states["diff"] == "failed", result.task_states
    out = capfd.readouterr().out
    assert f"line {line}:" in out and words in out, out[-2000:]
    assert data_tree(zk) == before


def test_unsafe_changes_are_refused_together_before_any_write(env, capfd) -> None:
    cluster, zk, conn_id, run_root = env
    spec = ("topics:\n  orders:\n    partitions: 1\n  __consumer_offsets:\n    delete: true\n"
            "  brand-new:\n    partitions: 3\n    replication_factor: 5\n")
    cluster.create_topics({"__consumer_offsets": ({0: [1, 2, 3]}, None, None)})
    assert cluster.wait_idle(30)
    before = data_tree(zk)
    result = run(conn_id, run_root, spec=spec, answer=None)
    assert result.state == "failed" and result.task_states["diff"] == "failed"
    out = capfd.readouterr().out
    assert "3 problem(s)" in out and "Kafka cannot remove partitions" in out and "more than the 3 registered" in out
    assert data_tree(zk) == before
