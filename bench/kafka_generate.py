"""Kafka 2.4's ``kafka-reassign-partitions.sh --generate`` logic, ported for the plan benchmark.

What ``ReassignPartitionsCommand.generateAssignment`` does with ``--zookeeper``: read the
registered brokers (with their racks, ``--disable-rack-aware`` not given), read the assignment
of every topic to move from its topic znode (one read per topic, no partition state), then for
each topic place all its partitions afresh with ``AdminUtils.assignReplicasToBrokers`` over the
``--broker-list`` (here: every live broker but the removed ones), and print the current and the
proposed assignment as JSON. The placement is the project's exact port of AdminUtils
(:func:`kafka_zk.assignment.assign_replicas`, docs/zookeeper.md §4); the reads are kazoo
pipelined gets. Kafka's JVM start (≈ 1 s) is not in it: the real tool could not be installed
here (issue 30 measured it elsewhere).

Usage: ``python bench/kafka_generate.py --zookeeper HOST:PORT[/chroot] --remove 3,10,17``;
prints the proposed assignment's partition count and writes both JSON documents to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kafka_zk import codecs, paths  # noqa: E402
from kafka_zk.assignment import assign_replicas  # noqa: E402
from kafka_zk.connect import close, connect  # noqa: E402
from kafka_zk.snapshot import pipelined  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zookeeper", required=True)
    ap.add_argument("--remove", required=True, help="broker ids left out of --broker-list")
    ap.add_argument("--out", default=os.devnull, help="where the current and proposed JSON go")
    args = ap.parse_args(argv)
    removed = {int(b) for b in args.remove.split(",")}
    client = connect(args.zookeeper)
    try:
        ids = sorted(int(b) for b in client.get_children(paths.BROKER_IDS))
        regs = pipelined(client, "get", [paths.broker(b) for b in ids])
        racks = {b: codecs.decode_broker_registration(regs[paths.broker(b)][0]).rack for b in ids}
        topics = sorted(client.get_children(paths.BROKER_TOPICS))
        raw = pipelined(client, "get", [paths.topic(t) for t in topics])
    finally:
        close(client)
    current = {t: codecs.decode_topic_assignment(raw[paths.topic(t)][0]).partitions for t in topics}
    brokers = [(b, racks[b]) for b in ids if b not in removed]
    rng = random.Random()
    proposed = {}
    for t in topics:
        parts = current[t]
        rf = len(next(iter(parts.values())))
        proposed[t] = assign_replicas(brokers, len(parts), rf, rng=rng)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("Current partition replica assignment\n")
        f.write(json.dumps({"version": 1, "partitions": [
            {"topic": t, "partition": p, "replicas": list(r), "log_dirs": ["any"] * len(r)}
            for t in topics for p, r in sorted(current[t].items())]}, separators=(",", ":")) + "\n")
        f.write("Proposed partition reassignment configuration\n")
        f.write(json.dumps({"version": 1, "partitions": [
            {"topic": t, "partition": p, "replicas": list(r), "log_dirs": ["any"] * len(r)}
            for t in topics for p, r in sorted(proposed[t].items())]}, separators=(",", ":")) + "\n")
    print(sum(len(v) for v in proposed.values()), "partitions proposed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
