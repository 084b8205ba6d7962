"""Plan benchmarks: decommission quality on 48 brokers / 20k partitions, and plan-step wall time.

1. 48 brokers, 3 racks, 20,000 partitions, RF 3, 4 brokers removed (kernel on the driver):
   replica moves vs the lower bound, replica-count spread (global and within each rack),
   rack violations, preferred-leader spread, kernel time.
2. Wall time of the whole plan step (``python -m spark_jobs.plan_job``, a fresh process:
   Spark start included) for 100,000 and 1,000,000 partitions (100 brokers, 3 racks, RF 3,
   10 removed), plus the plain-Python snapshot load time for comparison.

Run: ``/tmp/venv/bin/python bench/bench_plan.py [--sizes 100000,1000000]``. Prints figures only.
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

from formats.snapshot_file import load_snapshot, write_snapshot  # noqa: E402
from planning.kernels.decommission import plan_decommission  # noqa: E402
from planning.kernels.loads import cluster_loads, distinct_racks, rack_map, spread  # noqa: E402
from planning.kernels.validate import plan_violations  # noqa: E402
from spark_jobs.synthetic import synthetic_cluster, synthetic_sizes  # noqa: E402


def quality(alpha: float = 1.5) -> None:
    snap = synthetic_cluster(48, 3, 200, 100, 3, seed=1)
    sizes = synthetic_sizes(snap, seed=2, alpha=alpha)
    removed = [3, 10, 17, 30]
    t = time.perf_counter()
    plan = plan_decommission(snap, removed, sizes, seed=0)
    took = time.perf_counter() - t
    t = time.perf_counter()
    violations = plan_violations(snap, plan, removed, sizes)
    vtook = time.perf_counter() - t
    lower = sum(1 for p in snap.partitions() for b in p.replicas if b in removed)
    racks = rack_map(snap.brokers)
    live = [b for b in snap.brokers if b not in removed]
    final = cluster_loads(snap.partitions(), live, sizes, None, plan.target)
    before = cluster_loads(snap.partitions(), live, sizes)
    rack_bad = sum(1 for m in plan.moves if distinct_racks(m.target, racks) < len(m.target))
    by_rack: dict[str, list[int]] = {}
    for b in live:
        by_rack.setdefault(racks[b], []).append(b)
    print(f"== decommission 48 brokers / 20,000 partitions / RF 3 / 3 racks, removing 4 (racks 0,1,2,0), "
          f"sizes Pareto α {alpha}")
    print(f"partitions moved {len(plan.moves)}, replica moves {plan.replica_moves}, lower bound {lower}")
    print(f"replica spread global {spread(final.replicas[b] for b in live)} (racks hold 14/15/15 brokers, "
          f"so the rack with 14 carries more per broker), within racks "
          f"{ {r: spread(final.replicas[b] for b in bs) for r, bs in sorted(by_rack.items())} } "
          f"(before: { {r: spread(before.replicas[b] for b in bs) for r, bs in sorted(by_rack.items())} })")
    print(f"rack violations {rack_bad}; preferred-leader spread {spread(final.leaders[b] for b in live)} "
          f"(before {spread(before.leaders[b] for b in live)}); invariant violations {len(violations)}")
    def rel(vals):
        vals = list(vals)
        return (max(vals) - min(vals)) / (sum(vals) / len(vals))
    print(f"bytes spread within racks after "
          f"{ {r: round(rel(final.bytes[b] for b in bs), 3) for r, bs in sorted(by_rack.items())} } "
          f"before { {r: round(rel(before.bytes[b] for b in bs), 3) for r, bs in sorted(by_rack.items())} }")
    print(f"kernel {took:.2f} s, validation {vtook:.2f} s")


def wall(n_partitions: int, workdir: str) -> None:
    topics = n_partitions // 1000
    t = time.perf_counter()
    snap = synthetic_cluster(100, 3, topics, 1000, 3, seed=3)
    path = os.path.join(workdir, f"snap-{n_partitions}.jsonl")
    write_snapshot(snap, path)
    gen = time.perf_counter() - t
    del snap
    t = time.perf_counter()
    loaded = load_snapshot(path)
    load_s = time.perf_counter() - t
    del loaded
    out = os.path.join(workdir, f"out-{n_partitions}")
    cmd = [sys.executable, "-m", "spark_jobs.plan_job", "--snapshot", path, "--op", "decommission",
           "--brokers", ",".join(str(b) for b in range(0, 100, 10)), "--throttle", "50000000",
           "--max-moves-per-broker", "20", "--out", out, "--master", "local[2]"]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    took = time.perf_counter() - t
    if proc.returncode != 0:
        print(proc.stderr[-2000:])
        raise SystemExit(1)
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    print(f"== plan step, {n_partitions:,} partitions, 100 brokers, RF 3, 10 removed")
    print(f"wall {took:.1f} s (fresh process, Spark start included); inside: {s['timings_s']}")
    print(f"replica moves {s['replica_moves']} = lower bound {s['replica_moves_lower_bound']}; "
          f"waves {s['waves']}; within-rack replica spread {s['balance_after']['replica_spread_within_rack']}")
    print(f"(synthetic generation + write {gen:.1f} s; plain-Python load_snapshot {load_s:.1f} s, not in the job)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100000,1000000")
    args = ap.parse_args()
    quality(1.5)
    quality(3.0)
    with tempfile.TemporaryDirectory() as d:
        for n in (int(x) for x in args.sizes.split(",") if x):
            wall(n, d)


if __name__ == "__main__":
    main()
