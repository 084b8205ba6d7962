"""add_brokers and rebalance plans on the 48-broker / 20,000-partition cluster of bench_plan.py.

The cluster: 48 brokers in 3 racks, 200 topics × 100 partitions, RF 3, placed by Kafka's own
algorithm, Pareto(1.5) sizes (seeded: the same cluster as bench_plan's quality run).

1. add_brokers: 3 new registered, empty brokers join (one per rack, 51 in all). Replica moves vs
   the minimum (fewest moves that bring every broker within one replica of the others), replica /
   preferred-leader / bytes spread before and after, kernel time.
2. rebalance, on the 48-broker cluster as it is and on the 51-broker cluster with the 3 empty
   brokers: budgets none / 100 replicas / 1 TiB; replica moves (and the minimum for a replica
   spread of 1), bytes moved, spreads before → after, why it stopped, kernel time.
3. Plan-step wall time of each operation as the DAG runs it (``python -m spark_jobs.plan_job``, a
   fresh process, Spark local[2] start included).

Run: ``.venv/bin/python bench/bench_rebalance.py [--no-spark]``. Prints figures only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kafka_zk.model import Broker, ClusterSnapshot  # noqa: E402
from kafka_zk.sizes_file import write_sizes_file  # noqa: E402
from kafka_zk.snapshot_file import write_snapshot  # noqa: E402
from spark_jobs.kernels.budget_rebalance import RebalanceBudget, plan_budget_rebalance  # noqa: E402
from spark_jobs.kernels.loads import cluster_loads  # noqa: E402
from spark_jobs.kernels.rebalance import plan_add_brokers  # noqa: E402
from spark_jobs.kernels.validate import plan_violations  # noqa: E402
from spark_jobs.synthetic import synthetic_cluster, synthetic_sizes  # noqa: E402

TiB = 1 << 40
NEW = {48: "r0", 49: "r1", 50: "r2"}


def clusters():
    snap = synthetic_cluster(48, 3, 200, 100, 3, seed=1)
    sizes = synthetic_sizes(snap, seed=2, alpha=1.5)
    grown = ClusterSnapshot({**snap.brokers, **{b: Broker(b, r, f"b{b}", 9092) for b, r in NEW.items()}},
                            snap.topics, controller_id=snap.controller_id, controller_epoch=snap.controller_epoch)
    return snap, grown, sizes


def spreads(snap: ClusterSnapshot, sizes, target=None) -> tuple[int, int, float]:
    live = sorted(snap.brokers)
    loads = cluster_loads(snap.partitions(), live, sizes, None, target)
    b = [loads.bytes[x] for x in live]
    return (max(loads.replicas[x] for x in live) - min(loads.replicas[x] for x in live),
            max(loads.leaders[x] for x in live) - min(loads.leaders[x] for x in live),
            round((max(b) - min(b)) / (sum(b) / len(b)), 3))


def minimum_moves(snap: ClusterSnapshot) -> int:
    """Fewest replica moves for a replica spread of 1 (the most loaded keep the larger share)."""
    live = sorted(snap.brokers)
    loads = cluster_loads(snap.partitions(), live, None)
    total, n = sum(loads.replicas[b] for b in live), len(live)
    shares = [total // n + (1 if i < total % n else 0) for i in range(n)]
    return sum(max(0, c - s) for c, s in zip(sorted((loads.replicas[b] for b in live), reverse=True), shares))


def fmt(s: tuple[int, int, float]) -> str:
    return f"replicas {s[0]}, leaders {s[1]}, bytes {s[2]:.1%}"


def add_brokers(grown: ClusterSnapshot, sizes) -> None:
    t = time.perf_counter()
    plan = plan_add_brokers(grown, sorted(NEW), sizes, seed=0)
    took = time.perf_counter() - t
    bad = plan_violations(grown, plan, (), sizes)
    after = cluster_loads(grown.partitions(), sorted(grown.brokers), sizes, None, plan.target)
    mean = sum(after.replicas.values()) / len(grown.brokers)
    print("== add_brokers: 48 brokers / 20,000 partitions / RF 3 / 3 racks + 3 new (one per rack), sizes Pareto α 1.5")
    print(f"replica moves {plan.replica_moves} (minimum {minimum_moves(grown)}), {plan.bytes_moved / TiB:.2f} TiB; "
          f"new brokers hold {[after.replicas[b] for b in NEW]} replicas (mean {mean:.1f}), "
          f"{[round(after.bytes[b] / (1 << 30)) for b in NEW]} GiB (mean "
          f"{sum(after.bytes.values()) / len(grown.brokers) / (1 << 30):.0f} GiB), "
          f"leads {[after.leaders[b] for b in NEW]}")
    print(f"spread before: {fmt(spreads(grown, sizes))}; after: {fmt(spreads(grown, sizes, plan.target))}; "
          f"invariant violations {len(bad)}; kernel {took:.2f} s")


def rebalance(name: str, snap: ClusterSnapshot, sizes) -> None:
    print(f"== rebalance on {name}: minimum replica moves for a replica spread of 1: {minimum_moves(snap)}")
    for label, budget in (("no cap", RebalanceBudget()), ("100 replicas", RebalanceBudget(max_replicas=100)),
                          ("1 TiB", RebalanceBudget(max_bytes=TiB))):
        t = time.perf_counter()
        out = plan_budget_rebalance(snap, sizes, budget, seed=0)
        took = time.perf_counter() - t
        bad = plan_violations(snap, out.plan, (), sizes)
        print(f"budget {label}: {out.replicas_moved} replica moves, {out.bytes_moved / TiB:.2f} TiB, "
              f"{out.leader_changes} preferred-leader re-orders; spread {fmt(spreads(snap, sizes))} → "
              f"{fmt(spreads(snap, sizes, out.plan.target))}; {out.stopped_by}; violations {len(bad)}; "
              f"kernel {took:.2f} s")


def plan_step(op: str, snap: ClusterSnapshot, sizes, workdir: str, extra: list[str]) -> None:
    path = os.path.join(workdir, f"snap-{op}-{len(snap.brokers)}.jsonl")
    write_snapshot(snap, path)
    sizes_path = os.path.join(workdir, "sizes.jsonl")
    write_sizes_file(sizes, sizes_path)
    out = os.path.join(workdir, f"out-{op}-{len(snap.brokers)}")
    cmd = [sys.executable, "-m", "spark_jobs.plan_job", "--snapshot", path, "--op", op, "--sizes", sizes_path,
           "--throttle", "50000000", "--max-moves-per-broker", "5", "--out", out, "--master", "local[2]", *extra]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    took = time.perf_counter() - t
    if proc.returncode != 0:
        print(proc.stderr[-2000:])
        raise SystemExit(1)
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    print(f"== plan step --op {op} {' '.join(extra)} ({len(snap.brokers)} brokers, 20,000 partitions): wall {took:.1f} s "
          f"(fresh process, Spark start included); replica moves {s['replica_moves']}, waves {s['waves']}; "
          f"inside: {s['timings_s']}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-spark", action="store_true", help="kernels only, no plan-step wall time")
    args = ap.parse_args()
    snap, grown, sizes = clusters()
    add_brokers(grown, sizes)
    rebalance("the 48-broker cluster", snap, sizes)
    rebalance("the 51-broker cluster (3 empty brokers)", grown, sizes)
    if not args.no_spark:
        with tempfile.TemporaryDirectory() as d:
            plan_step("add-brokers", grown, sizes, d, ["--brokers", ",".join(map(str, NEW))])
            plan_step("rebalance", snap, sizes, d, ["--max-replicas-moved", "100"])


if __name__ == "__main__":
    main()
