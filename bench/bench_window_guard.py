"""How well the maintenance-window guard predicts waves, and what the windows cost in wall time.

Runs the real ``decommission_brokers`` DAG (Airflow ``dag.test()``, plan made by the kernels
without Spark, handed over with ``plan_from``) on the emulator in real time (speed 1: a wave takes
as long as its bytes need at the throttle) under a windows file of 1-minute windows every
2 minutes, and reads back the run folder's ``windows.json`` and ``waves.json``:

* per wave: the planner's prediction, the factor measured on the run's earlier waves, the
  prediction the guard used, the actual duration (submitted → done) and how long before the
  window's close it finished (negative: it ran past the close, which the guard should prevent);
* the pauses (a wave not started because it would not fit) and the wall time against the time
  spent copying.

Usage: ``python bench/bench_window_guard.py [--unit-mib 30 --throttle-mib 8 --topics 3]``.
Prints the figures; asserts nothing. Loopback only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
MIB = 1024 ** 2
WINDOWS = """clusters:
  bench_zk:
    windows:
      - name: every-other-minute
        start: "*/2 * * * *"
        duration: 1m
        timezone: UTC
        runbooks: [decommission_brokers]
"""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--brokers", type=int, default=6)
    p.add_argument("--racks", type=int, default=3)
    p.add_argument("--topics", type=int, default=3)
    p.add_argument("--partitions", type=int, default=6)
    p.add_argument("--unit-mib", type=float, default=30.0, help="mean partition size, MiB (lognormal)")
    p.add_argument("--throttle-mib", type=float, default=8.0)
    p.add_argument("--max-moves-per-broker", type=int, default=2)
    args = p.parse_args(argv)
    os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING")
    from kazoo.client import KazooClient

    from kafka_sim.cluster import ClusterSpec, EmulatedCluster
    from kafka_sim.seed import broker_racks, partition_sizes, topic_layout
    from kafka_zk.codecs import TopicPartition
    from kafka_sim.zookeeper_server import EmbeddedZooKeeper
    from kafka_zk.snapshot import read_snapshot
    from cli.local_run import configure_local_airflow, run_dag, set_connection
    from planning.plan_folder.write import write_plan_artifacts
    from planning.kernels.decommission import plan_decommission
    from planning.kernels.waves import WaveLimits, pack_waves
    from spark_jobs.summary import build_summary

    work = Path(tempfile.mkdtemp(prefix="kr-bench-windows-"))
    zk_server = EmbeddedZooKeeper().start()
    cluster = zk = None
    throttle = int(args.throttle_mib * MIB)
    try:
        root = KazooClient(hosts=zk_server.connect_string, timeout=10)
        root.start(timeout=10)
        root.ensure_path("/kafka")
        root.stop()
        root.close()
        connect = f"{zk_server.connect_string}/kafka"
        racks = broker_racks(args.brokers, args.racks)
        removed = [max(racks)]
        cluster = EmulatedCluster(connect, ClusterSpec(brokers=racks, speed=1.0, seed=1)).start()
        layout = topic_layout(racks, args.topics, args.partitions, 3, seed=1)
        sizes = partition_sizes(layout, "lognormal", args.unit_mib * MIB, seed=1)
        cluster.create_topics({t: (layout[t], sizes[t], None) for t in layout})
        zk = KazooClient(hosts=connect, timeout=10)
        zk.start(timeout=10)
        snap = read_snapshot(zk, with_configs=False)
        by_tp = {TopicPartition(t, p): s for t, per in sizes.items() for p, s in per.items()}
        plan = plan_decommission(snap, removed, by_tp, seed=0)
        limits = WaveLimits(max_moves_per_broker=args.max_moves_per_broker, throttle_bytes_per_s=throttle)
        waves = pack_waves(plan.moves, limits)
        write_plan_artifacts(str(work / "plan"), plan, waves, build_summary(snap, plan, waves, limits, by_tp), throttle)
        (work / "windows.yaml").write_text(WINDOWS)
        os.environ["KAFKA_RUNBOOKS_WINDOWS_FILE"] = str(work / "windows.yaml")
        configure_local_airflow(work / "airflow")
        set_connection("bench_zk", {"conn_type": "kafka_zookeeper", "host": zk_server.connect_string,
                                    "extra": {"chroot": "/kafka"}})
        started = time.time()
        result = run_dag("decommission_brokers", {
            "zk_conn_id": "bench_zk", "brokers_to_remove": removed, "run_root": str(work / "runs"),
            "throttle_bytes_per_sec": throttle, "max_moves_per_broker": args.max_moves_per_broker,
            "poll_interval_s": 0.5, "plan_from": str(work / "plan")}, answer="Approve", approver="bench-approver")
        wall = time.time() - started
        print(f"run {result.state}; {len(waves)} waves; wall {wall:.0f} s (load {os.getloadavg()[0]:.1f})")
        if result.state != "success":
            print(result.task_states)
            return 1
        book = json.loads((result.run_folder / "windows.json").read_text())
        done = {w["id"]: w for w in json.loads((result.run_folder / "waves.json").read_text())["waves"]}
        planned = {w["index"]: w["predicted_seconds"] for w in
                   json.loads((work / "plan" / "waves.json").read_text())["waves"]}
        copying = 0.0
        print("wave  planner_s  factor  guard_s  actual_s  finished_before_close_s")
        for d in (d for d in book["decisions"] if d["start"]):
            w = done[d["wave"]]
            actual = float(w["done_at"]) - float(w["submitted_at"])
            copying += actual
            closes = datetime.fromisoformat(book["started"][str(d["wave"])]["closes"]).timestamp()
            print(f"{d['wave']:>4}  {planned[d['wave']]:>9.1f}  {d['factor']:>6.3f}  {d['predicted_s']:>7.1f}  "
                  f"{actual:>8.1f}  {closes - float(w['done_at']):>+23.1f}")
        print(f"pauses: {len(book['pauses'])}; overran: {len(book['overran'])}; "
              f"time copying {copying:.0f} s of {wall:.0f} s wall")
        return 0
    finally:
        if zk is not None:
            zk.stop()
            zk.close()
        if cluster is not None:
            cluster.stop()
        zk_server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
