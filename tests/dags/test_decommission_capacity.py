"""decommission_brokers with broker disk capacity, end to end (Airflow dag.test, Spark, the emulator).

Removing broker 6 (rack c) of the scenario sends every rack-c replica to broker 3, the only
other rack-c broker: 50 GiB before, 255 GiB after. With 250 GiB disks (85 %: 212.5 GiB) the plan
is refused before any write, naming broker 3 and what would fit; with 320 GiB disks (limit 272
GiB) the run succeeds and, sampled from the emulator's own disk figures while it runs, no broker
that receives data ever holds more than its limit (broker 6, 290 GiB, is over it from the start
and only loses data). The emulator's disks have the same capacity, so a plan that
overfilled a broker would stall there, as a full log directory does.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_zk.capacity import DiskCapacity, write_capacity
from tests.dags.conftest import new_chroot, plain_client, zk_connection
from tests.dags.scenario import GB, RACKS, REMOVED, THROTTLE, TOPICS, data_tree, write_sizes

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.usefixtures("airflow_db")]


def _cluster(zk_server, disk_gib: int):
    chroot = new_chroot(zk_server)
    spec = ClusterSpec(brokers=RACKS, speed=3600.0, seed=0, disk_capacity={b: disk_gib * GB for b in RACKS})
    cluster = EmulatedCluster(zk_server.connect_string + chroot, spec).start()
    cluster.create_topics({name: (assignment, sizes, None) for name, (assignment, sizes) in TOPICS.items()})
    return cluster, plain_client(zk_server, chroot), zk_connection(zk_server, chroot)


def _conf(conn_id: str, run_root: Path, capacity: str, sizes: str) -> dict:
    return {"zk_conn_id": conn_id, "spark_conn_id": "spark_local", "brokers_to_remove": REMOVED,
            "run_root": str(run_root), "throttle_bytes_per_sec": THROTTLE, "max_moves_per_broker": 2,
            "poll_interval_s": 0.3, "capacity_file": capacity, "sizes_file": sizes, "disk_threshold_pct": 85}


def test_a_decommission_that_would_overfill_a_broker_is_refused_before_any_write(zk_server, tmp_path) -> None:
    from cli.local_run import run_dag

    cluster, zk, conn_id = _cluster(zk_server, 250)
    try:
        capacity = tmp_path / "capacity.json"
        write_capacity(str(capacity), DiskCapacity({b: 250 * GB for b in RACKS}))
        before = data_tree(zk)
        result = run_dag("decommission_brokers", _conf(conn_id, tmp_path / "runs", str(capacity),
                                                       write_sizes(cluster, tmp_path)))
        assert result.state == "failed" and result.task_states["plan"] == "failed", result.task_states
        assert result.task_states["approve"] == "upstream_failed"
        reason = (result.run_folder / "plan_refused.txt").read_text()
        assert "broker 3 (rack c) would hold 255.0 GiB = 102 % of 250.0 GiB, 42.5 GiB over the 85 % threshold" \
            in reason
        assert "rack c would need 2 broker(s) of this capacity (it keeps 1; 6 leave it)" in reason
        assert not (result.run_folder / "plan" / "plan.json").exists()
        assert data_tree(zk) == before
    finally:
        zk.stop()
        zk.close()
        cluster.stop()


def test_with_room_no_broker_passes_the_threshold_at_any_poll(zk_server, tmp_path) -> None:
    from cli.local_run import run_dag

    cluster, zk, conn_id = _cluster(zk_server, 320)
    peaks = {b: 0 for b in RACKS}
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.05):
            for b, used in cluster.disk_usage().items():
                peaks[b] = max(peaks[b], used)

    sampler = threading.Thread(target=sample, daemon=True)
    try:
        capacity = tmp_path / "capacity.json"
        write_capacity(str(capacity), DiskCapacity({b: 320 * GB for b in RACKS}))
        sampler.start()
        result = run_dag("decommission_brokers", _conf(conn_id, tmp_path / "runs", str(capacity),
                                                       write_sizes(cluster, tmp_path)),
                         answer="Approve", approver="carol.sre")
        stop.set()
        sampler.join(timeout=10)
        assert result.state == "success", result.task_states
        limit = int(320 * GB * 0.85)
        kept = {b: v for b, v in peaks.items() if b not in REMOVED}
        assert max(kept.values()) <= limit, {b: round(v / GB, 1) for b, v in peaks.items()}
        assert peaks[6] == 290 * GB      # already over 85 % before the run: it only ever loses data
        assert cluster.disk_usage()[3] == 255 * GB and cluster.disk_usage()[6] == 0
        folder = result.run_folder
        disk = json.loads((folder / "plan" / "summary.json").read_text())["disk"]
        assert disk["checked"] and disk["worst_broker"] == 3 and disk["worst_peak_pct"] == 79.7
        report = (folder / "plan_report.md").read_text()
        assert "fullest broker 3 peaks at 79.7 % of its capacity (threshold 85 %)" in report
        assert "| 3 | 320.0 GiB | 15.6 % | 79.7 % | 79.7 % |" in report
        assert "Broker 3 grows 5.1x (50.0 GiB -> 255.0 GiB): rack c keeps 1 broker while broker 6 leaves it" in report
        body = json.loads((folder / "approval.json").read_text())
        assert body["decision"] == "approved"
    finally:
        stop.set()
        zk.stop()
        zk.close()
        cluster.stop()
