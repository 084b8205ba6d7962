"""Orchestration overhead per wave, and simulated makespan against the physical lower bound.

Runs the real ``decommission_brokers`` DAG (Airflow ``dag.test()`` on SQLite, Spark plan, the
emulator on an embedded ZooKeeper) and watches ``/admin/reassign_partitions`` from a separate
kazoo client: every creation (a wave written) and deletion (the controller finished it) is
stamped with wall time and the emulator's simulated clock. Reported:

* **overhead per wave** — wall seconds from one wave's node disappearing (finished in ZooKeeper)
  to the next wave's node being created: trigger poll latency + task resume + guards of the
  next wave (snapshot read, throttle merge) + the write;
* **simulated makespan** — simulated seconds from the first wave written to the last wave
  finished, against the plan's physical lower bound (busiest broker bytes ÷ throttle) and the
  planner's prediction; and the same without the gaps between waves.

Usage: ``python bench/bench_orchestration.py [--topics 12 --partitions 50 --speed 600 ...]``.
Prints the figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
GiB = 1024 ** 3


class NodeWatch(threading.Thread):
    """Polls a znode's existence every ``period`` s; records (wall, sim, exists) at each change."""

    def __init__(self, client, path: str, sim_now, period: float = 0.005) -> None:
        super().__init__(daemon=True, name="node-watch")
        self.client, self.path, self.sim_now, self.period = client, path, sim_now, period
        self.changes: list[tuple[float, float, bool]] = []
        self.stop_event = threading.Event()

    def run(self) -> None:
        last = None
        while not self.stop_event.is_set():
            exists = self.client.exists(self.path) is not None
            if exists != last:
                self.changes.append((time.time(), self.sim_now(), exists))
                last = exists
            time.sleep(self.period)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--brokers", type=int, default=6)
    p.add_argument("--racks", type=int, default=3)
    p.add_argument("--topics", type=int, default=12)
    p.add_argument("--partitions", type=int, default=50)
    p.add_argument("--mean-size", type=float, default=4.0, help="GiB, lognormal")
    p.add_argument("--remove", default="4,5")
    p.add_argument("--throttle", type=int, default=100 * 1024 ** 2)
    p.add_argument("--max-moves-per-broker", type=int, default=20)
    p.add_argument("--speed", type=float, default=600.0)
    p.add_argument("--poll", type=float, default=0.5, help="trigger poll interval, s")
    args = p.parse_args(argv)
    removed = [int(b) for b in args.remove.split(",")]

    os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING")
    from kazoo.client import KazooClient

    from kafka_sim.cluster import ClusterSpec, EmulatedCluster
    from kafka_sim.seed import broker_racks, partition_sizes, topic_layout
    from kafka_sim.zookeeper_server import EmbeddedZooKeeper
    from cli.local_run import configure_local_airflow, run_dag, set_connection

    work = Path(tempfile.mkdtemp(prefix="kr-bench-orch-"))
    zk_server = EmbeddedZooKeeper().start()
    cluster = watcher = zk = None
    try:
        root = KazooClient(hosts=zk_server.connect_string, timeout=10)
        root.start(timeout=10)
        root.ensure_path("/kafka")
        root.stop()
        root.close()
        connect = f"{zk_server.connect_string}/kafka"
        racks = broker_racks(args.brokers, args.racks)
        cluster = EmulatedCluster(connect, ClusterSpec(brokers=racks, speed=args.speed, seed=1)).start()
        layout = topic_layout(racks, args.topics, args.partitions, 3, seed=1)
        sizes = partition_sizes(layout, "lognormal", args.mean_size * GiB, seed=1)
        cluster.create_topics({t: (layout[t], sizes[t], None) for t in layout})
        sizes_file = work / "log_dirs.json"
        sizes_file.write_text(cluster.log_dirs_json(), encoding="utf-8")
        configure_local_airflow(work / "airflow")
        set_connection("bench_zk", {"conn_type": "kafka_zookeeper", "host": zk_server.connect_string,
                                    "extra": {"chroot": "/kafka"}})
        set_connection("bench_spark", {"conn_type": "spark", "host": "local[2]"})
        zk = KazooClient(hosts=connect, timeout=10)
        zk.start(timeout=10)
        watcher = NodeWatch(zk, "/admin/reassign_partitions", cluster.now)
        watcher.start()
        started = time.time()
        result = run_dag("decommission_brokers", {
            "zk_conn_id": "bench_zk", "spark_conn_id": "bench_spark", "brokers_to_remove": removed,
            "throttle_bytes_per_sec": args.throttle, "max_moves_per_broker": args.max_moves_per_broker,
            "sizes_file": str(sizes_file), "run_root": str(work / "runs"),
            "poll_interval_s": args.poll}, answer="Approve", approver="bench-approver")
        wall = time.time() - started
        watcher.stop_event.set()
        watcher.join(timeout=5)
        if result.state != "success":
            print(f"run {result.state}: {result.task_states}")
            return 1
        folder = result.run_folder
        summary = json.loads((folder / "plan" / "summary.json").read_text())
        waves = json.loads((folder / "waves.json").read_text())["waves"]
        # pairs (created, deleted); the first pair is the demotion's same-set re-ordering
        pairs = []
        pending = None
        for wall_t, sim_t, exists in watcher.changes:
            if exists:
                pending = (wall_t, sim_t)
            elif pending is not None:
                pairs.append((pending, (wall_t, sim_t)))
                pending = None
        wave_pairs = pairs[-len(waves):]
        gaps = [wave_pairs[i][0][0] - wave_pairs[i - 1][1][0] for i in range(1, len(wave_pairs))]
        spans_sim = [d[1] - c[1] for c, d in wave_pairs]
        spans_wall = [d[0] - c[0] for c, d in wave_pairs]
        makespan = wave_pairs[-1][1][1] - wave_pairs[0][0][1]
        lower = summary["lower_bound_seconds"]
        print(f"cluster: {args.brokers} brokers, {args.topics}x{args.partitions} partitions RF3, "
              f"{summary['bytes_moved'] / GiB:,.1f} GiB to move off brokers {removed}, throttle "
              f"{args.throttle / 1024 ** 2:g} MiB/s, clock x{args.speed:g}, trigger poll {args.poll:g}s")
        print(f"DAG run wall time: {wall:.1f}s; waves: {len(waves)} ({[len(w['moves']) for w in waves]} partitions)")
        print("wave wall duration (node created -> deleted): " + ", ".join(f"{s:.2f}s" for s in spans_wall))
        if gaps:
            print(f"orchestration overhead per wave (node deleted -> next wave's node created), wall: "
                  f"mean {statistics.mean(gaps):.2f}s, median {statistics.median(gaps):.2f}s, "
                  f"max {max(gaps):.2f}s, over {len(gaps)} gaps; as a share of wave wall time: "
                  f"{statistics.mean(gaps) / statistics.mean(spans_wall):.0%}")
        print(f"simulated makespan (first wave written -> last wave done): {makespan / 3600:.2f} h; "
              f"sum of wave spans (no gaps): {sum(spans_sim) / 3600:.2f} h; physical lower bound "
              f"{lower / 3600:.2f} h; planner prediction {summary['predicted_seconds'] / 3600:.2f} h")
        print(f"makespan / lower bound: {makespan / lower:.3f} (with gaps), {sum(spans_sim) / lower:.3f} (waves only)")
        return 0
    finally:
        if watcher is not None:
            watcher.stop_event.set()
        if zk is not None:
            zk.stop()
            zk.close()
        if cluster is not None:
            cluster.stop()
        zk_server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
