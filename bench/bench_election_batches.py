"""Demotion and election batch planning, 250 → 20,000 partitions: linear growth.

For each size n: a synthetic cluster (24 brokers, 3 racks, RF 3, 100 partitions a topic) with n
partitions. Timed (CPU seconds of this process, best of 3): :func:`reorder_batches` on n re-ordered
partitions (each with its preferred replica demoted to last, as when every preferred leader's
broker is removed: the demotion payloads, ≤ 512 KiB each), :func:`demotion_targets` +
:func:`reorder_batches` for removing brokers 0..2, and :func:`election_steps` on a cluster where
every partition is led by its second replica (all n are candidates). Per-partition cost should
stay flat. (Before: operators/election.reorder_batches re-encoded the whole batch per added
partition: 0.07 s CPU for 250, 0.39 s for 500, 1.58 s for 1,000.)

Run: ``.venv/bin/python bench/bench_election_batches.py``. Prints figures only.
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kafka_zk.model import ClusterSnapshot, Partition, Topic  # noqa: E402
from planning.election import (demoted_order, demotion_targets, election_steps,  # noqa: E402
                                         reorder_batches)
from spark_jobs.synthetic import synthetic_cluster  # noqa: E402

SIZES = (250, 500, 1_000, 2_000, 5_000, 10_000, 20_000)


def led_by_second(snap: ClusterSnapshot) -> ClusterSnapshot:
    topics = {name: Topic(name, {i: Partition(name, i, p.replicas, leader=p.replicas[1], leader_epoch=1, isr=p.isr,
                                              controller_epoch=1) for i, p in t.partitions.items()})
              for name, t in snap.topics.items()}
    return ClusterSnapshot(snap.brokers, topics, controller_id=snap.controller_id, controller_epoch=1)


def best_of(fn, runs: int = 3) -> float:
    out = []
    for _ in range(runs):
        c = time.process_time()
        fn()
        out.append(time.process_time() - c)
    return min(out)


def main() -> None:
    removed = frozenset({0, 1, 2})
    print("partitions | re-order all: batches, CPU s, µs/partition | demote 0..2: partitions, batches, CPU s | "
          "election: candidates, batches, CPU s, µs/partition")
    for n in SIZES:
        snap = synthetic_cluster(24, 3, n // 100 or 1, min(n, 100), 3, seed=1)
        every = {p.tp: demoted_order(p.replicas, frozenset({p.replicas[0]})) for p in snap.partitions()}
        all_batches = reorder_batches(every)
        t_all = best_of(lambda: reorder_batches(every))
        targets = demotion_targets(snap, removed)
        batches = reorder_batches(targets)
        t_demote = best_of(lambda: reorder_batches(demotion_targets(snap, removed)))
        skewed = led_by_second(snap)
        eligible, _no, ebatches = election_steps(skewed, None)
        t_elect = best_of(lambda: election_steps(skewed, None))
        print(f"{n:>6} | {len(all_batches)}, {t_all:.3f}, {1e6 * t_all / n:.0f} | "
              f"{len(targets):>5}, {len(batches)}, {t_demote:.3f} | "
              f"{len(eligible):>6}, {len(ebatches)}, {t_elect:.3f}, {1e6 * t_elect / n:.0f}")


if __name__ == "__main__":
    main()
