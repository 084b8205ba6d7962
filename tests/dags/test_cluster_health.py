"""cluster_health end to end: real Airflow (dag.test on SQLite), real ZooKeeper, the emulator.

Problems are planted on the emulated cluster (a killed broker, leadership moved by restarts, a
throttle left behind); the run's JSON summary, report and task states are checked, and that the
check wrote nothing to ZooKeeper. The hand-off is checked by the DagRun it creates in Airflow's
metadata DB (queued: no scheduler runs it in a test).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_zk import health
from kafka_zk.errors import InvalidInput
from kafka_zk.snapshot import read_snapshot
from operators.runbooks.health import in_window
from tests.dags.conftest import OLD_SERVERS, new_chroot, plain_client, zk_connection
from tests.zk_helpers import tree

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]
RACKS = {1: "a", 2: "b", 3: "c"}


@pytest.fixture
def env(zk_server, tmp_path, zk_via):
    chroot = new_chroot(zk_server)
    cluster = EmulatedCluster(zk_server.connect_string + chroot, ClusterSpec(brokers=RACKS, seed=0)).start()
    cluster.create_topics({"orders": ({p: [1 + p % 3, 1 + (p + 1) % 3, 1 + (p + 2) % 3] for p in range(6)}, None,
                                      {"min.insync.replicas": "2"}),
                           "audit": ({0: [1, 2], 1: [2, 3]}, None, None)})
    zk = plain_client(zk_server, chroot)
    yield cluster, zk_connection(zk_server, chroot, zk_via), zk, tmp_path / "runs"
    zk.stop()
    zk.close()
    cluster.stop()


def _all_in_sync(zk) -> bool:
    return all(set(p.isr) == set(p.replicas) for p in read_snapshot(zk, with_configs=False).partitions())


def run(conn_id, run_root, **params):
    from cli.local_run import run_dag

    return run_dag("cluster_health", {"zk_conn_id": conn_id, "run_root": str(run_root), **params})


def summary(result) -> dict:
    return json.loads((result.run_folder / "health.json").read_text())


def test_clean_cluster_is_reported_clean_and_nothing_is_written(env):
    cluster, conn_id, zk, run_root = env
    assert cluster.wait_idle(30)
    before = tree(zk)
    result = run(conn_id, run_root, fail_on_severity="info")
    assert result.state == "success", result.task_states
    assert result.task_states["trigger_election"] == "skipped"
    doc = summary(result)
    assert doc["clean"] and doc["worst_severity"] == "ok" and doc["findings"] == []
    assert doc["partitions"] == 8 and doc["brokers"] == [1, 2, 3]
    assert "# Cluster health — CLEAN" in (result.run_folder / "health_report.md").read_text()
    assert (result.run_folder / "health_report.html").read_text().startswith("<!DOCTYPE html>")
    assert tree(zk) == before


def test_offline_partition_and_leaked_throttle_fail_the_run_at_the_configured_severity(env):
    cluster, conn_id, zk, run_root = env
    victim = next(b for b in (3, 2, 1) if b != cluster.controller_id())
    cluster.create_topic("solo", {0: [victim]})
    zk.create("/config/brokers/1", json.dumps({"version": 1, "config": {
        "follower.replication.throttled.rate": "1048576"}}).encode(), makepath=True)
    cluster.kill_broker(victim)
    assert cluster.wait_until(lambda: json.loads(zk.get("/brokers/topics/solo/partitions/0/state")[0])["leader"] == -1,
                              30)
    result = run(conn_id, run_root, fail_on_severity="critical")
    assert result.state == "failed"
    assert result.task_states["report"] == "success" and result.task_states["alert"] == "failed"
    doc = summary(result)
    assert doc["worst_severity"] == "critical"
    checks = {(f["check"], f["subject"]) for f in doc["findings"]}
    assert ("unavailable", "topic solo") in checks and ("leaked_throttle", "broker 1") in checks
    assert ("under_replicated", "topic orders") in checks
    report = (result.run_folder / "health_report.md").read_text()
    assert "[unavailable] topic solo" in report and "[leaked_throttle] broker 1" in report
    assert f"broker(s) {victim} that are not live" in report


@pytest.mark.parametrize("zk_via", OLD_SERVERS, indirect=True)  # its ZooKeeper steps on 3.8, 3.5 and 3.4
def test_leader_imbalance_inside_the_window_triggers_the_election_runbook(env):
    cluster, conn_id, zk, run_root = env
    for b in (1, 2):
        cluster.kill_broker(b)
        assert cluster.wait_until(lambda: zk.exists("/controller") is not None, 30)
        cluster.restart_broker(b)
        assert cluster.wait_idle(30)
    # only the leadership stays moved: every replica back in sync first (on a loaded machine the
    # restarted brokers may still be catching up, a critical finding that would fail the alert step)
    assert cluster.wait_until(lambda: _all_in_sync(zk), 120)
    result = run(conn_id, run_root, hand_off_election=True, maintenance_window="* 00:00-24:00",
                 fail_on_severity="critical")
    assert result.state == "success", result.task_states
    assert result.task_states["trigger_election"] == "success"
    doc = summary(result)
    assert [f for f in doc["findings"] if f["check"] == "leader_imbalance"]
    triggered = doc["hand_off"]["triggered_run_id"]
    assert doc["hand_off"]["wanted"] and triggered

    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    with create_session() as session:
        dr = session.query(DagRun).filter(DagRun.dag_id == "preferred_leader_election",
                                          DagRun.run_id == triggered).one()
        assert dr.conf == {"zk_conn_id": conn_id, "run_root": str(run_root)}   # the election still asks a human
    assert f"Triggered run `{triggered}`" in (result.run_folder / "health_report.md").read_text()

    now = datetime.now(timezone.utc)
    elsewhere = (now + timedelta(days=3)).strftime("%a")
    outside = run(conn_id, run_root, hand_off_election=True, maintenance_window=f"{elsewhere} 00:00-24:00")
    assert outside.task_states["trigger_election"] == "skipped"
    assert "outside the maintenance window" in summary(outside)["hand_off"]["reason"]


def test_maintenance_window_parsing():
    sat_0300 = datetime(2026, 11, 21, 3, 0, tzinfo=timezone.utc)  # a Saturday
    assert in_window("Sat,Sun 02:00-05:00", sat_0300)
    assert not in_window("Sun 02:00-05:00", sat_0300)
    assert in_window("Fri 22:00-04:00", sat_0300)  # crosses midnight from Friday
    assert not in_window("Sat 22:00-04:00", sat_0300)
    assert in_window("* 00:00-24:00", sat_0300) and not in_window(None, sat_0300)
    for bad in ("weekends 02:00-05:00", "Sat 2-5", "Sat 05:00-05:00", "Xyz 01:00-02:00"):
        with pytest.raises(InvalidInput, match="maintenance_window"):
            in_window(bad, sat_0300)


@pytest.mark.parametrize("dag_id", ["delete_topics", "preferred_leader_election", "cluster_health"])
def test_every_dag_has_doc_md_and_every_param_a_description(dag_id):
    from cli.local_run import load_dag

    dag = load_dag(dag_id)
    assert dag.doc_md and len(dag.doc_md) > 200
    for name, param in dag.params.items():
        assert getattr(param, "description", None), f"{dag_id}: Param {name} has no description"
    if dag_id == "cluster_health":
        assert dag.catchup is False and dag.schedule is not None


def test_a_full_disk_with_a_capacity_file_is_an_anomaly_for_rebalance_and_without_the_api_nothing_is_proposed(
        zk_server, tmp_path):
    """The check step finds a broker above disk_threshold_pct of its capacity (sizes from the
    emulator's published log dirs, the connection's log_dirs_source) and writes the sizes it judged
    for the rebalance it would propose; with no Airflow API connection, the propose step proposes
    nothing and the report says why (the run does not fail for it)."""
    chroot = new_chroot(zk_server)
    cluster = EmulatedCluster(zk_server.connect_string + chroot, ClusterSpec(brokers=RACKS, seed=0)).start()
    try:
        mib = 1024 ** 2
        cluster.create_topics({"big": ({0: [1, 2], 1: [1, 3]}, {0: 60 * mib, 1: 30 * mib}, None),
                               "small": ({0: [2, 3]}, {0: mib}, None)})
        assert cluster.wait_idle(30) and cluster.publish_log_dirs(force=True)
        conn_id = zk_connection(zk_server, chroot, log_dirs_source="emulator")
        capacity = tmp_path / "capacity.json"
        capacity.write_text(json.dumps({"version": 1, "default_bytes": 100 * mib}))
        result = run(conn_id, tmp_path / "runs", capacity_file=str(capacity), disk_threshold_pct=80,
                     airflow_api_conn_id="no_such_api", fail_on_severity="critical")
        assert result.state == "success", result.task_states
        doc = summary(result)
        (disk,) = [a for a in doc["anomalies"] if a["kind"] == "disk"]
        assert disk["key"] == "disk:brokers 1" and disk["runbook"] == "rebalance"
        assert disk["conf"]["capacity_file"] == str(capacity) and disk["conf"]["rehearse"] == "on"
        from kafka_zk.log_dirs import replica_sizes

        sizes = replica_sizes(open(disk["conf"]["sizes_file"]).read())
        assert sum(s for (_, b), s in sizes.items() if b == 1) == 90 * mib
        assert doc["proposals"]["proposed"] == [] and "'no_such_api' is not defined" in doc["proposals"]["note"]
        report = (result.run_folder / "health_report.md").read_text()
        assert "## Proposals" in report and "'no_such_api' is not defined" in report
    finally:
        cluster.stop()


def test_every_proposal_conf_names_only_params_of_its_runbook():
    """A proposed run's conf is checked against its runbook's Params at its first step (an unknown key
    fails it): each kind's conf, with what the propose step adds, must name only Params."""
    from kafka_zk.codecs import ReassignmentEntry, ReassignmentRequest
    from kafka_zk.health import HealthThresholds, ZnodeAge, ZnodeAges
    from procedures.proposals import KINDS, DiskUse, find_anomalies
    from kafka_zk.model import Broker, ClusterSnapshot, Partition, Topic
    from cli.local_run import load_dag

    def snap(rows, live, **kw):
        parts = {i: Partition("a", i, r, leader=r[0], leader_epoch=0, isr=tuple(b for b in r if b in live))
                 for i, r in enumerate(rows)}
        return ClusterSnapshot({b: Broker(b) for b in live}, {"a": Topic("a", parts, kw.pop("config", {}))}, **kw)

    ages = ZnodeAges(now_ms=10_000_000, reassignment=ZnodeAge("/admin/reassign_partitions", 0, 0))
    cases = [snap([(1, 5), (2, 3)], (1, 2, 3)),
             snap([(1, 2), (2, 1), (1, 2)], (1, 2, 3), config={"leader.replication.throttled.replicas": "0:1"}),
             snap([(1, 2), (2, 3)], (1, 2, 3), reassignment=ReassignmentRequest((ReassignmentEntry("a", 0, (1, 9)),)))]
    found = {}
    for s in cases:
        report = health.check_health(s, ages, HealthThresholds(stuck_reassignment_s=0))
        for a in find_anomalies(s, report, zk_conn_id="prod", disk=[DiskUse(1, 9, 8, 10)], capacity_file="c.json",
                                sizes_file="s.json", disk_threshold_pct=80):
            found.setdefault(a.kind, a)
    assert set(found) == set(KINDS)
    for a in found.values():
        params = set(load_dag(a.runbook).params)
        assert set(a.conf) | {"run_root", "notify_conn_ids"} <= params, (a.kind, set(a.conf) - params)
