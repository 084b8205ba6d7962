"""Benchmark: partition-state reads, one blocking ``get`` at a time vs the snapshot readers.

Starts a private ZooKeeper (Debian's 3.8, on 127.0.0.1) and, in front of it in a process of its
own, the test proxy that answers as ZooKeeper 3.5.7 does (tests/zk_proxy.py: no multiRead) at
the speed of a real 3.5.7 (``--calibrated``, the default: :meth:`tests.zk_proxy.CostModel.
zookeeper_3_5_7`; ``--uncalibrated`` forwards as fast as it can). Populates ``--partitions``
state znodes (default 20,000, in topics of ``--per-topic`` partitions) with asynchronous
creates, then reads them back through the stand-in — one blocking ``get`` at a time (the
baseline), kazoo's pipelined ``get_async``, the bulk reader on one session (what it did before
issue 27) and on its default sessions (what ``read_snapshot`` uses on servers without
multiRead) — and on the 3.8 server directly: one-by-one, the bulk reader, and batched
``multiRead`` (what ``read_snapshot`` uses there). Prints the median of ``--rounds`` rounds of
each, the speed-ups over the same server's baseline (same run), and a full ``read_snapshot`` on
each. Figures only, no assertions but that every reader read the same states.
Usage: ``python -m bench.bench_snapshot [--partitions N] [--per-topic M] [--rounds R] [--uncalibrated]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from typing import Iterator

from kazoo.client import KazooClient

from kafka_zk import bulk_reader, paths
from kafka_zk.codecs import TopicPartition
from kafka_sim.zookeeper_server import EmbeddedZooKeeper
from kafka_zk.snapshot import (decode_states, pipelined, read_partition_states, read_partition_states_one_by_one,
                               read_snapshot)


def _wait_all(results, timeout: float = 60.0) -> None:
    for r in results:
        r.get(timeout=timeout)


def populate(zk: KazooClient, n_partitions: int, per_topic: int) -> list[TopicPartition]:
    """Topic znodes, partitions nodes and state znodes, created async level by level."""
    for p in ("/brokers/ids", "/brokers/topics"):
        zk.ensure_path(p)
    n_topics = (n_partitions + per_topic - 1) // per_topic
    tps = [TopicPartition(f"bench-{t:05d}", p) for t in range(n_topics) for p in range(per_topic)][:n_partitions]
    by_topic: dict[str, list[int]] = {}
    for tp in tps:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    _wait_all([zk.create_async(paths.topic(t), json.dumps(
        {"version": 1, "partitions": {str(p): [p % 3, (p + 1) % 3] for p in ps}}).encode())
        for t, ps in by_topic.items()])
    _wait_all([zk.create_async(paths.topic_partitions(t), b"") for t in by_topic])
    _wait_all([zk.create_async(paths.partition(tp.topic, tp.partition), b"") for tp in tps])
    state = b'{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0,"isr":[0,1]}'
    _wait_all([zk.create_async(paths.partition_state(tp.topic, tp.partition), state) for tp in tps])
    return tps


def timed(fn, *args, rounds: int = 3) -> float:
    """Median wall time of ``rounds`` calls."""
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _client(hosts: str) -> KazooClient:
    zk = KazooClient(hosts=hosts, timeout=30)
    zk.start(timeout=30)
    return zk


@contextmanager
def stand_in(upstream: str, calibrated: bool) -> Iterator[str]:
    """The 3.5 proxy in a child process (its threads do not share this process's interpreter
    lock with the readers); yields its ``host:port``."""
    argv = [sys.executable, "-m", "tests.zk_proxy", "--upstream", upstream, "--mode", "3.5"]
    proc = subprocess.Popen(argv + (["--calibrated"] if calibrated else []), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        yield proc.stdout.readline().strip()
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def _row(label: str, seconds: float, n: int, baseline: float | None = None) -> str:
    ratio = f"  ({baseline / seconds:.1f}x)" if baseline else ""
    return f"  {label:<30}: {seconds:8.3f} s  {n / seconds:10.0f} znodes/s{ratio}"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=20_000)
    ap.add_argument("--per-topic", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--uncalibrated", action="store_true", help="the stand-in forwards as fast as it can")
    args = ap.parse_args(argv)
    r = args.rounds
    with EmbeddedZooKeeper() as server, stand_in(server.connect_string, not args.uncalibrated) as proxy_hosts:
        direct = _client(server.connect_string)
        old = _client(proxy_hosts)
        try:
            t0 = time.perf_counter()
            tps = populate(direct, args.partitions, args.per_topic)
            t_pop = time.perf_counter() - t0
            state_paths = [paths.partition_state(tp.topic, tp.partition) for tp in tps]
            by_path = dict(zip(state_paths, tps))
            old_figures = {
                "one-by-one reads": timed(read_partition_states_one_by_one, old, tps, rounds=r),
                "kazoo pipelined gets": timed(lambda: pipelined(old, "get", state_paths), rounds=r),
                "bulk reader, 1 session": timed(lambda: decode_states(
                    bulk_reader.read_many(old, state_paths, 4096, sessions=1).found, by_path), rounds=r),
                f"bulk reader, {bulk_reader.sessions_for(len(tps))} sessions (default)":
                    timed(lambda: read_partition_states(old, tps, multi=False), rounds=r),
            }
            snap_old = timed(read_snapshot, old, rounds=r)
            new_figures = {
                "one-by-one reads": timed(read_partition_states_one_by_one, direct, tps, rounds=r),
                "bulk reader (default sessions)": timed(lambda: read_partition_states(direct, tps, multi=False),
                                                        rounds=r),
                "multiRead batches (default)": timed(lambda: read_partition_states(direct, tps, multi=True),
                                                     rounds=r),
            }
            snap_new = timed(read_snapshot, direct, rounds=r)
            baseline = read_partition_states_one_by_one(old, tps)
            assert read_partition_states(old, tps) == baseline  # the default on a 3.5 server
            assert read_partition_states(direct, tps, multi=True) == baseline
            assert read_partition_states(direct, tps, multi=False) == baseline
        finally:
            for zk in (direct, old):
                zk.stop()
                zk.close()
    n = len(tps)
    print(f"partition-state znodes: {n} (populated with async creates in {t_pop:.1f} s); "
          f"load average {os.getloadavg()[0]:.1f}; median of {args.rounds} rounds")
    model = "uncalibrated" if args.uncalibrated else "calibrated on a real 3.5.7"
    print(f"through the 3.5 stand-in ({model}; no multiRead):")
    one = old_figures["one-by-one reads"]
    for label, seconds in old_figures.items():
        print(_row(label, seconds, n, None if seconds is one else one))
    print(f"  full read_snapshot            : {snap_old:8.3f} s  ({n // args.per_topic} topics, configs, states)")
    print("ZooKeeper 3.8 directly:")
    one = new_figures["one-by-one reads"]
    for label, seconds in new_figures.items():
        print(_row(label, seconds, n, None if seconds is one else one))
    print(f"  full read_snapshot            : {snap_new:8.3f} s")


if __name__ == "__main__":
    main()
