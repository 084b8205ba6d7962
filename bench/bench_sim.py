"""Emulator benchmarks: idle CPU of a small cluster, start time of a large one.

Prints figures for BENCHMARKS.md (never asserted in tests):
* idle CPU: 6 brokers, 200 partitions (RF 3), after it settled: this process's CPU time over
  ``--idle-seconds`` wall seconds, as a percentage of one core;
* start: 6 brokers, then 20,000 partitions (200 topics × 100, RF 3, rack-aware) seeded and their
  partition/state znodes created by the controller: wall seconds; plus a controller failover
  (re-load of everything from ZooKeeper) and a broker failure on that cluster;
* wave: ~1,000 partitions reassigned through one admin node, wall and simulated time.

Runs against its own embedded ZooKeeper (127.0.0.1). ``python bench/bench_sim.py [--partitions N]``.
"""

from __future__ import annotations

import argparse
import time

from kafka_sim import seed
from kafka_sim.cluster import ClusterSpec, EmulatedCluster
from kafka_sim.zookeeper_server import EmbeddedZooKeeper


def layout(topics: int, partitions: int):
    racks = seed.broker_racks(6, 3)
    lay = seed.topic_layout(racks, topics, partitions, 3, seed=0)
    sizes = seed.partition_sizes(lay, "lognormal", 1e9, seed=0)
    return racks, {n: (a, sizes[n], None) for n, a in lay.items()}


def bench_idle(zk: EmbeddedZooKeeper, seconds: float) -> None:
    racks, topics = layout(20, 10)
    with EmulatedCluster(f"{zk.connect_string}/idle", ClusterSpec(brokers=racks, speed=3600.0)) as c:
        c.create_topics(topics)
        c.wait_idle(60)
        cpu0, wall0 = time.process_time(), time.monotonic()
        time.sleep(seconds)
        cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    print(f"idle: 6 brokers, 200 partitions: {100 * cpu / wall:.2f}% of one core "
          f"({cpu:.3f} s CPU over {wall:.1f} s wall)")


def bench_start(zk: EmbeddedZooKeeper, partitions: int) -> None:
    racks, topics = layout(partitions // 100, 100)
    t0 = time.monotonic()
    c = EmulatedCluster(f"{zk.connect_string}/big", ClusterSpec(brokers=racks, speed=3600.0)).start()
    t1 = time.monotonic()
    c.create_topics(topics, timeout=600)
    t2 = time.monotonic()
    print(f"start: 6 brokers in {t1 - t0:.2f} s; {partitions} partitions seeded and initialised by the "
          f"controller in {t2 - t1:.2f} s (total {t2 - t0:.2f} s)")
    c.wait_idle(600)
    t = time.monotonic()
    c.publish_log_dirs(force=True)
    pub = time.monotonic() - t
    cpu0, wall0 = time.process_time(), time.monotonic()
    for _ in range(5):
        time.sleep(1.0)
        c.publish_log_dirs()           # what `kafka-runbook sim` does every second
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    print(f"idle: {partitions} partitions with the once-a-second publication check: "
          f"{100 * cpu / wall:.2f}% of one core; one publication of the log-dirs JSON: {pub:.2f} s")
    t3 = time.monotonic()
    c.move_controller(timeout=600)
    t4 = time.monotonic()
    print(f"failover: new controller loaded {partitions} partitions from ZooKeeper in {t4 - t3:.2f} s")
    t5 = time.monotonic()
    c.kill_broker(0)
    c.wait_idle(600)
    print(f"broker failure: leaders moved and ISRs shrunk ({partitions // 2} replicas on broker 0) in "
          f"{time.monotonic() - t5:.2f} s")
    c.stop()


def bench_wave(zk: EmbeddedZooKeeper) -> None:
    """One /admin/reassign_partitions node moving every replica off broker 0 (~1,000 of 2,000
    partitions of 1 GB, RF 3, 100 MB/s network): wall time and simulated makespan."""
    import json

    from kazoo.client import KazooClient

    racks = seed.broker_racks(6, 3)
    lay = seed.topic_layout(racks, 20, 100, 3, seed=0)
    sizes = seed.partition_sizes(lay, "fixed", 1e9, 0)
    with EmulatedCluster(f"{zk.connect_string}/wave",
                         ClusterSpec(brokers=racks, speed=3600.0, network_rate=100e6)) as c:
        c.create_topics({n: (a, sizes[n], None) for n, a in lay.items()})
        entries, led_by_0 = [], 0
        for n, a in sorted(lay.items()):
            for p, r in sorted(a.items()):
                if 0 in r:
                    led_by_0 += r[0] == 0
                    spare = next(x for x in range(1, 6) if x not in r)
                    entries.append({"topic": n, "partition": p, "replicas": [spare if b == 0 else b for b in r]})
        client = KazooClient(hosts=f"{zk.connect_string}/wave")
        client.start(timeout=10)
        t0, s0 = time.monotonic(), c.now()
        client.create("/admin/reassign_partitions", json.dumps({"version": 1, "partitions": entries}).encode())
        c.wait_until(lambda: client.exists("/admin/reassign_partitions") is None, 900)
        wall, sim = time.monotonic() - t0, c.now() - s0
        client.stop()
        client.close()
    bound = max(led_by_0 * 1e9, len(entries) * 1e9 / 5) / 100e6
    print(f"wave: {len(entries)} partitions moved off broker 0 in one node: {wall:.1f} s wall, "
          f"{sim:.0f} s simulated (bound {bound:.0f} s: broker 0's leader traffic)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=20_000)
    ap.add_argument("--idle-seconds", type=float, default=10.0)
    args = ap.parse_args()
    with EmbeddedZooKeeper() as zk:
        bench_idle(zk, args.idle_seconds)
        bench_start(zk, args.partitions)
        bench_wave(zk)


if __name__ == "__main__":
    main()
