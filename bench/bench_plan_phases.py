"""Plan-step wall time per phase, on cached synthetic inputs (for before/after comparisons).

Decommission of 10 of 100 brokers (3 racks, RF 3) on N partitions (default 100,000 and
1,000,000): a fresh process per run (Spark start included), printing the wall time, the job's
own phase timings (``timings_s`` in summary.json), the replica moves against the lower bound
and the plan hash. The synthetic input files are written once into ``--workdir`` and reused,
so repeated runs measure only the plan step.

With ``--sized``, a sizes file goes with the snapshot, in the form ``--sizes-form`` names:
``jsonl`` (the ``sizes.jsonl`` the snapshot step writes: what the DAG's plan step reads) or
``log-dirs`` (the raw ``kafka-log-dirs.sh --describe`` output, one ~240 MB JSON line at 10⁶
partitions, which the plan job reduces in its driver). ``--cli`` runs the whole user command
``kafka-runbook plan decommission --snapshot F [--sizes F] --out D`` instead of
``python -m spark_jobs.plan_job``. ``--convert`` also times the snapshot step's conversion
alone (log-dirs → sizes.jsonl, :func:`formats.sizes_file.convert_sizes`) in a fresh process,
with its peak RSS.

Run: ``/tmp/venv/bin/python bench/bench_plan_phases.py [--sizes 100000,1000000] [--runs 1]
[--workdir /tmp/bench-plan] [--sized [--sizes-form jsonl|log-dirs]] [--cli] [--convert]
[--format jsonl|parquet]``. Prints figures only (and the load average at the start of each run).
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
from formats.sizes_file import convert_sizes  # noqa: E402
from formats.snapshot_file import write_snapshot  # noqa: E402
from spark_jobs.synthetic import synthetic_cluster, synthetic_sizes  # noqa: E402

BROKERS = ",".join(str(b) for b in range(0, 100, 10))

CONVERT = """
import resource, sys, time
from formats.sizes_file import convert_sizes
t = time.perf_counter()
n = convert_sizes(sys.argv[1], sys.argv[2])
print(n, round(time.perf_counter() - t, 2), round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))
"""


def inputs(n_partitions: int, workdir: str, sized: bool, fmt: str = "jsonl",
           sizes_form: str = "log-dirs") -> tuple[str, str | None]:
    """Write (once) the snapshot (and sizes) files for ``n_partitions``; return their paths."""
    path = os.path.join(workdir, f"snap-{n_partitions}.{fmt}")
    log_dirs = os.path.join(workdir, f"sizes-{n_partitions}.txt")
    jsonl = os.path.join(workdir, f"sizes-{n_partitions}.jsonl")
    if not os.path.exists(path) or (sized and not os.path.exists(log_dirs)):
        t = time.perf_counter()
        snap = synthetic_cluster(100, 3, n_partitions // 1000, 1000, 3, seed=3)
        write_snapshot(snap, path)
        if sized:
            sizes = synthetic_sizes(snap, seed=4)
            per_broker: dict = {}
            for p in snap.partitions():
                for b in p.replicas:
                    per_broker.setdefault(b, {})[p.tp] = sizes[p.tp]
            with open(log_dirs, "w") as f:
                f.write(encode_log_dirs(per_broker))
        print(f"(wrote inputs for {n_partitions:,} partitions in {time.perf_counter() - t:.1f} s)")
    if not sized:
        return path, None
    if sizes_form == "log-dirs":
        return path, log_dirs
    if not os.path.exists(jsonl) or os.path.getmtime(jsonl) < os.path.getmtime(log_dirs):
        convert_sizes(log_dirs, jsonl)
    return path, jsonl


def convert_once(log_dirs: str, workdir: str) -> None:
    """The snapshot step's conversion alone, in a fresh process: time and peak RSS."""
    out = os.path.join(workdir, "converted.jsonl")
    proc = subprocess.run([sys.executable, "-c", CONVERT, log_dirs, out], capture_output=True, text=True,
                          timeout=900, cwd=REPO)
    if proc.returncode != 0:
        print(proc.stderr[-3000:])
        raise SystemExit(1)
    n, took, rss = proc.stdout.split()
    print(f"   conversion log-dirs ({os.path.getsize(log_dirs) / 1e6:.0f} MB) → sizes.jsonl "
          f"({os.path.getsize(out) / 1e6:.0f} MB): {int(n):,} partitions in {took} s, peak RSS {rss} MB")
    os.unlink(out)


def run_once(path: str, sizes_path: str | None, out: str, cli: bool = False) -> tuple[float, dict]:
    if cli:
        cmd = [sys.executable, "-m", "cli.main", "plan", "decommission", "--snapshot", path,
               "--brokers", BROKERS, "--throttle", "50000000", "--max-moves-per-broker", "20",
               "--out", out, "--master", "local[2]"]
    else:
        cmd = [sys.executable, "-m", "spark_jobs.plan_job", "--snapshot", path, "--op", "decommission",
               "--brokers", BROKERS, "--throttle", "50000000", "--max-moves-per-broker", "20",
               "--out", out, "--master", "local[2]"]
    if sizes_path:
        cmd += ["--sizes", sizes_path]
    if cli and os.path.isdir(out):
        for name in os.listdir(out):  # the CLI refuses a non-plan folder, and a re-run rewrites it anyway
            os.unlink(os.path.join(out, name))
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
    ap.add_argument("--sizes", default="100000,1000000", help="partition counts, comma-separated")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--workdir", default="/tmp/bench-plan")
    ap.add_argument("--sized", action="store_true", help="also pass a sizes file")
    ap.add_argument("--sizes-form", default="jsonl", choices=("jsonl", "log-dirs"),
                    help="the sizes file's form (with --sized)")
    ap.add_argument("--cli", action="store_true", help="time `kafka-runbook plan decommission` instead of the job")
    ap.add_argument("--convert", action="store_true", help="also time the log-dirs → sizes.jsonl conversion")
    ap.add_argument("--format", default="jsonl", choices=("jsonl", "parquet"), help="snapshot file format")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    for n in (int(x) for x in args.sizes.split(",") if x):
        path, sizes_path = inputs(n, args.workdir, args.sized or args.convert, args.format, args.sizes_form)
        if args.convert:
            convert_once(os.path.join(args.workdir, f"sizes-{n}.txt"), args.workdir)
        sizes_path = sizes_path if args.sized else None
        what = ("kafka-runbook plan" if args.cli else "plan_job") + \
            (f", sizes as {args.sizes_form}" if sizes_path else ", no sizes")
        for r in range(args.runs):
            out = os.path.join(args.workdir, f"out-{n}-{r}")
            load = os.getloadavg()
            took, s = run_once(path, sizes_path, out, args.cli)
            print(f"== {n:,} partitions, {args.format} snapshot, {what}, run {r + 1}: wall {took:.1f} s "
                  f"(load avg at start {load[0]:.2f}); phases {s['timings_s']}")
            print(f"   replica moves {s['replica_moves']} (lower bound {s['replica_moves_lower_bound']}), "
                  f"waves {s['waves']}, plan_hash {s['plan_hash'][:16]}")


if __name__ == "__main__":
    main()
