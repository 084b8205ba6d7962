"""Rebalance and add-brokers plans on the shapes of issue 25, against the count minimum.

Shapes (sizes Pareto, seeded; racks r0..r{k-1}; Kafka's own placement, spark_jobs.synthetic):

(a) 48 brokers / 3 racks / 200 topics × 100 partitions / RF 3, plus 3 new empty brokers (one per
    rack): ``add_brokers`` for the three, and ``rebalance`` of the 51;
(b) the 48-broker cluster skewed (:func:`spark_jobs.synthetic.skewed_cluster`: two brokers per rack
    hold ~2× the replicas of the others and most preferred leaderships): ``rebalance``;
(c) 96 brokers / 6 racks / 1,000 topics × 100 partitions / RF 3 (+ 6 new brokers for add-brokers;
    the 96 skewed for rebalance).

Each line: replica moves against the count minimum (fewest moves that bring every broker within one
replica of the others), bytes moved, replica / preferred-leader / bytes spread before → after over the
brokers that hold data after the plan, rack violations (partitions spanning fewer racks than
before), invariant violations, why it stopped, the floor under the bytes spread (the largest
partition on one broker), kernel CPU and wall time (CPU: what the kernel costs; wall: that plus
whatever else the shared machine runs). Sizes: Pareto α 1.5 (a few partitions near a broker's
whole share: the bytes target is out of reach, the floor says by how much) and α 2.5 (lighter tail).

Run: ``.venv/bin/python bench/bench_rebalance.py [--no-large]``. Prints figures only.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kafka_zk.model import Broker, ClusterSnapshot  # noqa: E402
from planning.model import Plan  # noqa: E402
from planning.kernels.balance import count_minimum  # noqa: E402
from planning.kernels.budget_rebalance import RebalanceBudget, plan_budget_rebalance  # noqa: E402
from planning.kernels.loads import cluster_loads, rack_map  # noqa: E402
from planning.kernels.add_and_move import plan_add_brokers  # noqa: E402
from planning.kernels.validate import plan_violations  # noqa: E402
from spark_jobs.synthetic import skewed_cluster, synthetic_cluster, synthetic_sizes  # noqa: E402

TiB = 1 << 40


def grown(snap: ClusterSnapshot, racks: int) -> tuple[ClusterSnapshot, list[int]]:
    first = max(snap.brokers) + 1
    new = {first + i: f"r{i}" for i in range(racks)}
    return ClusterSnapshot({**snap.brokers, **{b: Broker(b, r, f"b{b}", 9092) for b, r in new.items()}},
                           snap.topics, controller_id=snap.controller_id,
                           controller_epoch=snap.controller_epoch), sorted(new)


def spreads(snap: ClusterSnapshot, sizes, members, target=None) -> tuple[int, int, float]:
    loads = cluster_loads(snap.partitions(), sorted(members), sizes, None, target)
    b = [loads.bytes[x] for x in members]
    return (max(loads.replicas[x] for x in members) - min(loads.replicas[x] for x in members),
            max(loads.leaders[x] for x in members) - min(loads.leaders[x] for x in members),
            (max(b) - min(b)) / (sum(b) / len(b)))


def bytes_floor(snap: ClusterSnapshot, sizes, members) -> float:
    """The broker holding the largest partition holds at least its share of replicas."""
    share = sum(len(p.replicas) for p in snap.partitions()) // len(members)
    mean = sum(sizes[p.tp] * len(p.replicas) for p in snap.partitions()) / len(members)
    return max(0.0, (max(sizes.values()) + (share - 1) * min(sizes.values()) - mean) / mean)


def rack_violations(snap: ClusterSnapshot, plan: Plan) -> int:
    racks = rack_map(snap.brokers)
    return sum(1 for m in plan.moves if len({racks[b] for b in m.target}) < len({racks[b] for b in m.current}))


def fmt(s: tuple[int, int, float]) -> str:
    return f"replicas {s[0]}, leaders {s[1]}, bytes {s[2]:.1%}"


def report(label: str, snap: ClusterSnapshot, sizes, members, plan: Plan, took: tuple[float, float],
           extra: str = "") -> None:
    minimum = count_minimum(snap, members)
    print(f"{label}: {plan.replica_moves} replica moves (count minimum {minimum}, "
          f"×{plan.replica_moves / max(1, minimum):.3f}), {plan.bytes_moved / TiB:.2f} TiB; "
          f"{fmt(spreads(snap, sizes, members))} → {fmt(spreads(snap, sizes, members, plan.target))}; "
          f"rack violations {rack_violations(snap, plan)}; invariant violations "
          f"{len(plan_violations(snap, plan, (), sizes))}; bytes floor {bytes_floor(snap, sizes, members):.1%}"
          f"{extra}; kernel {took[0]:.2f} s CPU, {took[1]:.2f} s wall")


def add_brokers(label: str, snap: ClusterSnapshot, new: list[int], sizes) -> None:
    t, c = time.perf_counter(), time.process_time()
    plan = plan_add_brokers(snap, new, sizes, seed=0)
    took = (time.process_time() - c, time.perf_counter() - t)
    report(f"add_brokers {label}", snap, sizes, sorted(snap.brokers), plan, took)


def rebalance(label: str, snap: ClusterSnapshot, sizes, budget: RebalanceBudget = RebalanceBudget()) -> None:
    t, c = time.perf_counter(), time.process_time()
    out = plan_budget_rebalance(snap, sizes, budget, seed=0)
    took = (time.process_time() - c, time.perf_counter() - t)
    report(f"rebalance {label}", snap, sizes, sorted(snap.brokers), out.plan, took,
           f"; {out.count_moves} count + {out.extra_moves} byte moves, {out.leader_changes} leader re-orders; "
           f"{out.stopped_by}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-large", action="store_true", help="skip the 96-broker / 100k-partition shape")
    args = ap.parse_args()
    base = synthetic_cluster(48, 3, 200, 100, 3, seed=1)
    plus, new = grown(base, 3)
    skewed = skewed_cluster(base)
    for alpha in (1.5, 2.5):
        sizes = synthetic_sizes(plus, seed=2, alpha=alpha)
        print(f"== 48 brokers / 3 racks / 20,000 partitions / RF 3, sizes Pareto α {alpha}")
        add_brokers("(a) 48 + 3 empty", plus, new, sizes)
        rebalance("(a) 48 + 3 empty", plus, sizes)
        rebalance("(b) skewed", skewed, sizes)
        rebalance("(b) skewed, budget 1,000 replicas", skewed, sizes, RebalanceBudget(max_replicas=1000))
    if not args.no_large:
        big = synthetic_cluster(96, 6, 1000, 100, 3, seed=1)
        big_plus, big_new = grown(big, 6)
        sizes = synthetic_sizes(big_plus, seed=2, alpha=1.5)
        print("== (c) 96 brokers / 6 racks / 100,000 partitions / RF 3, sizes Pareto α 1.5")
        add_brokers("(c) 96 + 6 empty", big_plus, big_new, sizes)
        rebalance("(c) 96 skewed", skewed_cluster(big), sizes)


if __name__ == "__main__":
    main()
