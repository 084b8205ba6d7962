"""Benchmark: partition-state reads, one blocking ``get`` at a time vs the snapshot readers.

Starts a private ZooKeeper (Debian's 3.8, on 127.0.0.1) and, in front of it, the test proxy that
answers as ZooKeeper 3.5.7 does (tests/zk_proxy.py: no multiRead). Populates ``--partitions``
state znodes (default 20,000, in topics of ``--per-topic`` partitions) with asynchronous creates,
then reads them back through the proxy — one blocking ``get`` at a time (the baseline), kazoo's
pipelined ``get_async``, and the bulk reader (kafka_zk/bulk_reader.py, what ``read_snapshot``
uses on servers without multiRead) — and, for reference, batched ``multiRead`` on the 3.8 server
directly. Prints the median of ``--rounds`` rounds of each and the speed-ups over the baseline
(same run), and a full ``read_snapshot`` through the proxy. Figures only, no assertions.
Usage: ``python -m bench.bench_snapshot [--partitions N] [--per-topic M] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from kazoo.client import KazooClient

from kafka_zk import paths
from kafka_zk.codecs import TopicPartition
from kafka_zk.embedded_zookeeper import EmbeddedZooKeeper
from kafka_zk.snapshot import (pipelined, read_partition_states, read_partition_states_one_by_one,
                               read_snapshot)
from tests.zk_proxy import ZkProxy


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


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=20_000)
    ap.add_argument("--per-topic", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    with EmbeddedZooKeeper() as server, ZkProxy((server.host, server.port), "3.5") as proxy:
        direct = _client(server.connect_string)
        old = _client(proxy.hosts)
        try:
            t0 = time.perf_counter()
            tps = populate(direct, args.partitions, args.per_topic)
            t_pop = time.perf_counter() - t0
            state_paths = [paths.partition_state(tp.topic, tp.partition) for tp in tps]
            r = args.rounds
            one = timed(read_partition_states_one_by_one, old, tps, rounds=r)
            kazoo_pipe = timed(lambda: pipelined(old, "get", state_paths), rounds=r)
            bulk = timed(lambda: read_partition_states(old, tps, multi=False), rounds=r)
            multi = timed(lambda: read_partition_states(direct, tps, multi=True), rounds=r)
            snap = timed(read_snapshot, old, rounds=r)
            baseline = read_partition_states_one_by_one(old, tps)
            assert read_partition_states(old, tps) == baseline  # the default on a 3.5 server
            assert read_partition_states(direct, tps, multi=True) == baseline
            assert proxy.refused == [], proxy.refused
        finally:
            for zk in (direct, old):
                zk.stop()
                zk.close()
    n = len(tps)
    print(f"partition-state znodes: {n} (populated with async creates in {t_pop:.1f} s); "
          f"load average {os.getloadavg()[0]:.1f}; median of {args.rounds} rounds")
    print("through the 3.5 proxy (no multiRead):")
    print(f"  one-by-one reads      : {one:8.3f} s  {n / one:10.0f} znodes/s")
    print(f"  kazoo pipelined gets  : {kazoo_pipe:8.3f} s  {n / kazoo_pipe:10.0f} znodes/s  ({one / kazoo_pipe:.1f}x)")
    print(f"  bulk reader (default) : {bulk:8.3f} s  {n / bulk:10.0f} znodes/s  ({one / bulk:.1f}x)")
    print(f"  full read_snapshot    : {snap:8.3f} s  ({n // args.per_topic} topics, configs, states)")
    print(f"3.8 directly, multiRead batches: {multi:8.3f} s  {n / multi:10.0f} znodes/s")


if __name__ == "__main__":
    main()
