"""Benchmark: partition-state reads, one blocking ``get`` at a time vs pipelined (snapshot.py).

Starts a private ZooKeeper (Debian's, on 127.0.0.1), populates ``--partitions`` state znodes
(default 20,000, spread over topics of ``--per-topic`` partitions) with asynchronous creates,
then reads them back three ways — one blocking ``get`` at a time (the baseline), pipelined
``get_async`` (ZooKeeper < 3.6 path), and batched ``multiRead`` (ZooKeeper ≥ 3.6, the default
when the server has it) — and prints znodes/s and the speed-ups; also times a full
``read_snapshot``. Figures only, no assertions. Usage:
``python -m bench.bench_snapshot [--partitions N] [--per-topic M] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import json
import time

from kazoo.client import KazooClient

from kafka_zk import paths
from kafka_zk.codecs import TopicPartition
from kafka_zk.embedded_zookeeper import EmbeddedZooKeeper
from kafka_zk.snapshot import read_partition_states, read_partition_states_one_by_one, read_snapshot


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
    """Best wall time of ``rounds`` calls."""
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=20_000)
    ap.add_argument("--per-topic", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    with EmbeddedZooKeeper() as server:
        zk = KazooClient(hosts=server.connect_string, timeout=30)
        zk.start(timeout=30)
        try:
            t0 = time.perf_counter()
            tps = populate(zk, args.partitions, args.per_topic)
            t_pop = time.perf_counter() - t0
            one = timed(read_partition_states_one_by_one, zk, tps, rounds=args.rounds)
            pipe = timed(lambda: read_partition_states(zk, tps, multi=False), rounds=args.rounds)
            multi = timed(lambda: read_partition_states(zk, tps, multi=True), rounds=args.rounds)
            snap = timed(read_snapshot, zk, rounds=args.rounds)
            baseline = read_partition_states_one_by_one(zk, tps)
            assert read_partition_states(zk, tps, multi=False) == baseline
            assert read_partition_states(zk, tps, multi=True) == baseline
        finally:
            zk.stop()
            zk.close()
    n = len(tps)
    print(f"partition-state znodes: {n} (populated with async creates in {t_pop:.1f} s)")
    print(f"one-by-one reads : {one:8.3f} s  {n / one:10.0f} znodes/s")
    print(f"pipelined gets   : {pipe:8.3f} s  {n / pipe:10.0f} znodes/s  ({one / pipe:.1f}x)")
    print(f"multiRead batches: {multi:8.3f} s  {n / multi:10.0f} znodes/s  ({one / multi:.1f}x)")
    print(f"(best of {args.rounds} rounds each)")
    print(f"full read_snapshot (brokers, {n // args.per_topic} topics, configs, states): {snap:.3f} s")


if __name__ == "__main__":
    main()
