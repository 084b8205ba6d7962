"""Plan-step wall time per phase, on cached synthetic inputs (for before/after comparisons).

Decommission of 10 of 100 brokers (3 racks, RF 3) on N partitions (default 100,000 and
1,000,000): a fresh ``python -m spark_jobs.plan_job`` process per run (Spark start included),
printing the wall time, the job's own phase timings (``timings_s`` in summary.json), the
replica moves against the lower bound and the plan hash. The synthetic snapshot files are
written once into ``--workdir`` and reused, so repeated runs measure only the plan step.

Run: ``/tmp/venv/bin/python bench/bench_plan_phases.py [--sizes 100000,1000000] [--runs 1]
[--workdir /tmp/bench-plan] [--sized] [--format jsonl|parquet]``. Prints figures only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from kafka_zk.log_dirs import encode_log_dirs  # noqa: E402
from kafka_zk.snapshot_file import write_snapshot  # noqa: E402
from spark_jobs.synthetic import synthetic_cluster, synthetic_sizes  # noqa: E402


def inputs(n_partitions: int, workdir: str, sized: bool, fmt: str = "jsonl") -> tuple[str, str | None]:
    """Write (once) the snapshot (and sizes) files for ``n_partitions``; return their paths."""
    path = os.path.join(workdir, f"snap-{n_partitions}.{fmt}")
    sizes_path = os.path.join(workdir, f"sizes-{n_partitions}.txt") if sized else None
    if os.path.exists(path) and (sizes_path is None or os.path.exists(sizes_path)):
        return path, sizes_path
    t = time.perf_counter()
    snap = synthetic_cluster(100, 3, n_partitions // 1000, 1000, 3, seed=3)
    write_snapshot(snap, path)
    if sizes_path:
        sizes = synthetic_sizes(snap, seed=4)
        per_broker: dict = {}
        for p in snap.partitions():
            for b in p.replicas:
                per_broker.setdefault(b, {})[p.tp] = sizes[p.tp]
        with open(sizes_path, "w") as f:
            f.write(encode_log_dirs(per_broker))
    print(f"(wrote inputs for {n_partitions:,} partitions in {time.perf_counter() - t:.1f} s)")
    return path, sizes_path


def run_once(path: str, sizes_path: str | None, out: str) -> tuple[float, dict]:
    cmd = [sys.executable, "-m", "spark_jobs.plan_job", "--snapshot", path, "--op", "decommission",
           "--brokers", ",".join(str(b) for b in range(0, 100, 10)), "--throttle", "50000000",
           "--max-moves-per-broker", "20", "--out", out, "--master", "local[2]"]
    if sizes_path:
        cmd += ["--sizes", sizes_path]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=REPO)
    took = time.perf_counter() - t
    if proc.returncode != 0:
        print(proc.stderr[-3000:])
        raise SystemExit(1)
    with open(os.path.join(out, "summary.json")) as f:
        return took, json.load(f)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--workdir", default="/tmp/bench-plan")
    ap.add_argument("--sized", action="store_true", help="also pass a kafka-log-dirs sizes file")
    ap.add_argument("--format", default="jsonl", choices=("jsonl", "parquet"), help="snapshot file format")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    for n in (int(x) for x in args.sizes.split(",") if x):
        path, sizes_path = inputs(n, args.workdir, args.sized, args.format)
        for r in range(args.runs):
            out = os.path.join(args.workdir, f"out-{n}-{r}")
            took, s = run_once(path, sizes_path, out)
            print(f"== {n:,} partitions, {args.format}{' (sized)' if sizes_path else ''}, run {r + 1}: wall {took:.1f} s; "
                  f"phases {s['timings_s']}")
            print(f"   replica moves {s['replica_moves']} (lower bound {s['replica_moves_lower_bound']}), "
                  f"waves {s['waves']}, plan_hash {s['plan_hash'][:16]}")


if __name__ == "__main__":
    main()
