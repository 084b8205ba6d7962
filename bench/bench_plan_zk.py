"""The whole command a user types, ZooKeeper read included, beside Kafka's ``--generate`` logic.

Loads a synthetic cluster (the shapes of bench/bench_plan_engines.py: Kafka-placed topics,
Pareto sizes) into a private ZooKeeper 3.8 (broker registrations, topic znodes, partition
state znodes, written in multi transactions), writes its sizes as raw
``kafka-log-dirs.sh --describe`` output, then times, each in a fresh process:

* ``kafka-runbook plan decommission --zookeeper … --brokers … --sizes <raw> --throttle …``
  (the phases come from the plan's summary.json: ``zk_assignments``, ``zk_states``,
  ``sizes_driver``, ``driver_read_aggregate``, ``states_wait``, kernel, waves);
* ``bench/kafka_generate.py`` on the same cluster: Kafka 2.4's ``--generate`` (brokers and topic
  znodes read, AdminUtils placement over the kept brokers; no JVM start).

Prints the median of ``--runs`` (after one warm-up) and the load average. ``--serve`` instead
keeps the populated server up and prints both commands (for timing them from outside), until
stdin closes. Figures only, no assertions.

Usage: ``python bench/bench_plan_zk.py [--shape 20k|100k|1m] [--runs 3] [--workdir D] [--serve]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from bench.bench_plan_engines import SHAPES, write_log_dirs  # noqa: E402
from kafka_zk import paths  # noqa: E402
from kafka_zk.embedded_zookeeper import EmbeddedZooKeeper  # noqa: E402
from spark_jobs.synthetic import synthetic_cluster, synthetic_sizes  # noqa: E402

TXN = 400       # creates per multi transaction


def populate(zk, snap) -> None:
    """Registrations (ephemeral, held by ``zk``), topic znodes and state znodes of ``snap``."""
    for p in ("/brokers/ids", "/brokers/topics", "/config/topics", "/config/brokers", "/admin/delete_topics"):
        zk.ensure_path(p)
    for b, br in snap.brokers.items():
        zk.create(paths.broker(b), json.dumps({
            "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"}, "endpoints": [f"PLAINTEXT://{br.host}:9092"],
            "jmx_port": -1, "host": br.host, "port": 9092, "version": 4, "timestamp": "1600000000000",
            "rack": br.rack}).encode(), ephemeral=True)
    ops = []
    for name, t in snap.topics.items():
        ops.append((paths.topic(name), json.dumps({"version": 1, "partitions": {
            str(p): list(part.replicas) for p, part in t.partitions.items()}}).encode()))
        ops.append((paths.topic_config(name), b'{"version":1,"config":{}}'))
        ops.append((paths.topic_partitions(name), b""))
        for p, part in t.partitions.items():
            ops.append((paths.partition(name, p), b""))
            ops.append((paths.partition_state(name, p), json.dumps({
                "controller_epoch": 1, "leader": part.leader, "version": 1, "leader_epoch": 0,
                "isr": list(part.isr)}).encode()))
    pending = []
    for i in range(0, len(ops), TXN):
        txn = zk.transaction()
        for path, data in ops[i:i + TXN]:
            txn.create(path, data)
        pending.append(txn.commit_async())
        if len(pending) >= 16:
            pending.pop(0).get(timeout=120)
    for r in pending:
        r.get(timeout=120)


def _timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, cwd=REPO, check=True, stdout=subprocess.DEVNULL, timeout=1800)
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> None:
    from kazoo.client import KazooClient

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", choices=sorted(SHAPES), default="20k")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", default="/tmp/bench-plan-zk")
    ap.add_argument("--serve", action="store_true")
    args = ap.parse_args(argv)
    s = SHAPES[args.shape]
    os.makedirs(args.workdir, exist_ok=True)
    snap = synthetic_cluster(s["brokers"], s["racks"], s["topics"], s["partitions"], 3, seed=3)
    sizes = synthetic_sizes(snap, seed=4)
    sizes_path = os.path.join(args.workdir, f"log-dirs-{args.shape}.txt")
    if not os.path.exists(sizes_path):
        write_log_dirs(snap, sizes, sizes_path)
    removed = ",".join(str(b) for b in s["removed"])
    with EmbeddedZooKeeper() as server:
        zk = KazooClient(hosts=server.connect_string, timeout=30)
        zk.start(timeout=30)
        t = time.perf_counter()
        populate(zk, snap)
        print(f"{args.shape}: {len(snap.brokers)} brokers, {sum(len(t.partitions) for t in snap.topics.values())} "
              f"partitions in {len(snap.topics)} topics loaded into ZooKeeper 3.8 in {time.perf_counter() - t:.1f} s; "
              f"raw log-dirs sizes {os.path.getsize(sizes_path) / 1e6:.1f} MB", flush=True)
        out = os.path.join(args.workdir, f"plan-{args.shape}")
        ours = [sys.executable, "-W", "ignore", "-m", "cli.main", "plan", "decommission", "--zookeeper",
                server.connect_string, "--brokers", removed, "--sizes", sizes_path, "--throttle", "50000000",
                "--out", out]
        kafkas = [sys.executable, "bench/kafka_generate.py", "--zookeeper", server.connect_string, "--remove", removed,
                  "--out", os.path.join(args.workdir, f"generate-{args.shape}.txt")]
        if args.serve:
            print("kafka-runbook:", " ".join(ours))
            print("Kafka --generate logic:", " ".join(kafkas), flush=True)
            sys.stdin.read()
            return
        figures: dict[str, list[float]] = {"ours": [], "kafka": []}
        phases = []
        loads = []
        for run in range(args.runs + 1):
            shutil.rmtree(out, ignore_errors=True)
            loads.append(os.getloadavg()[0])
            wall_ours = _timed(ours)
            wall_kafka = _timed(kafkas)
            if run:         # the first pair is the warm-up
                figures["ours"].append(wall_ours)
                figures["kafka"].append(wall_kafka)
                phases.append(json.load(open(os.path.join(out, "summary.json")))["timings_s"])
        zk.stop()
        zk.close()
    summary = json.load(open(os.path.join(out, "summary.json")))
    med = {k: statistics.median(v) for k, v in figures.items()}
    print(f"load average {min(loads):.1f}-{max(loads):.1f}; median of {args.runs} runs after a warm-up")
    print(f"  kafka-runbook plan decommission --zookeeper (raw log-dirs sizes): {med['ours']:.2f} s "
          f"({', '.join(f'{x:.2f}' for x in figures['ours'])})")
    print(f"  Kafka --generate logic (port, no JVM start): {med['kafka']:.2f} s "
          f"({', '.join(f'{x:.2f}' for x in figures['kafka'])})")
    keys = list(phases[0])
    print("  phases (median s): " + ", ".join(f"{k} {statistics.median(p.get(k, 0) for p in phases):.2f}"
                                              for k in keys))
    print(f"  plan: {summary['replica_moves']} replica moves (lower bound {summary['replica_moves_lower_bound']}), "
          f"hash {summary['plan_hash'][:12]}")


if __name__ == "__main__":
    main()
