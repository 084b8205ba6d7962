"""Replica verification throughput: ``verify-replicas`` against emulated brokers over 127.0.0.1.

Prints figures for BENCHMARKS.md (never asserted in tests):
* end to end: an emulated cluster (3 brokers, RF 3) in a child process serves deterministic
  batches over the Kafka protocol; this process runs the verifier from the earliest offset
  (Metadata, ListOffsets, Fetch rounds as a debugging consumer, comparison) and reports MB/s
  fetched (response bytes off the sockets) and compared (batch bytes compared), records/s;
* compare only: the pure comparison (CRC check, CRC and record-byte comparison) on batches
  already in memory, to separate the verifier's CPU from the emulator's serving.

Runs against its own embedded ZooKeeper (127.0.0.1).
``python bench/bench_verify.py [--partitions N] [--mib N] [--fetch-size BYTES]``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import time


def serve(zk_connect: str, partitions: int, mib: int, conn) -> None:
    from kafka_sim.cluster import ClusterSpec, EmulatedCluster
    spec = ClusterSpec(brokers={0: "a", 1: "b", 2: "c"}, speed=3600.0)
    with EmulatedCluster(zk_connect, spec) as c:
        assignment = {p: [(p + i) % 3 for i in range(3)] for p in range(partitions)}
        c.create_topic("bench", assignment, sizes={p: mib * 1024 * 1024 for p in range(partitions)})
        c.wait_idle(120)
        conn.send(c.broker_list())
        conn.recv()                 # until the parent is done


def bench_end_to_end(partitions: int, mib: int, fetch_size: int) -> None:
    from kafka_sim.zookeeper_server import EmbeddedZooKeeper
    from replica_verify.options import build_options
    from replica_verify.verifier import verify
    with EmbeddedZooKeeper() as zk:
        parent, child = mp.Pipe()
        proc = mp.get_context("spawn").Process(target=serve, args=(f"{zk.connect_string}/bench", partitions, mib, child))
        proc.start()
        try:
            if not parent.poll(300):
                raise SystemExit("the emulator did not start within 300 s")
            brokers = parent.recv()
            opts = build_options(brokers, "bench", fetch_size=fetch_size, max_wait_ms=500, time=-2,
                                 report_interval_ms=10**9)
            cpu0 = time.process_time()
            s = verify(opts, out=lambda line: None)
            cpu = time.process_time() - cpu0
        finally:
            parent.send("stop")
            proc.join(60)
    print(f"end to end: {partitions} partitions × {mib} MiB accounted, RF 3, --fetch-size {fetch_size}: "
          f"{s.records:,} records ({s.batches:,} batches) verified in {s.seconds:.2f} s over {s.rounds} rounds; "
          f"{s.bytes_fetched / 1e6:.1f} MB fetched = {s.bytes_fetched / 1e6 / s.seconds:.1f} MB/s, "
          f"{s.bytes_compared / 1e6:.1f} MB compared = {s.bytes_compared / 1e6 / s.seconds:.1f} MB/s, "
          f"{s.records / s.seconds:,.0f} records/s; verifier CPU {cpu:.2f} s; mismatches {len(s.mismatches)}")


def bench_compare_only(batches: int) -> None:
    from kafka_sim.wire.records import BATCH_RECORDS, read_log
    from replica_verify.compare import ReplicaData, compare_partition
    end = batches * BATCH_RECORDS
    data = read_log(0, "bench", 0, 0, end, 1 << 40)
    replicas = [ReplicaData(r, end, data) for r in range(3)]
    t0 = time.perf_counter()
    result = compare_partition("bench-0", 0, replicas)
    dt = time.perf_counter() - t0
    print(f"compare only: 3 replicas × {len(data) / 1e6:.1f} MB in memory: {result.bytes_compared / 1e6 / dt:.1f} MB/s "
          f"compared ({result.records / dt:,.0f} records/s, {dt:.2f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=12)
    ap.add_argument("--mib", type=int, default=4, help="accounted MiB per partition (1 record per KiB)")
    ap.add_argument("--fetch-size", type=int, default=1024 * 1024)
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}, cores: {os.cpu_count()}")
    bench_compare_only(2000)
    bench_end_to_end(args.partitions, args.mib, args.fetch_size)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
