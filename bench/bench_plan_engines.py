"""Plan wall time by engine: the input read in the driver (no JVM) against Spark local, same plan.

Shapes (the peers' benchmark shapes, synthetic clusters placed by Kafka's own algorithm, Pareto
sizes with a 1 GiB mean):

* ``20k``: 48 brokers / 3 racks / 20,000 partitions / RF 3, remove 3 (one per rack), sizes.jsonl;
* ``100k``: 96 brokers / 6 racks / 100,000 partitions / RF 3, remove 3 (racks 5, 4, 0), sizes.jsonl;
* ``1m``: 100 brokers / 3 racks / 1,000,000 partitions / RF 3, remove 10, raw
  ``kafka-log-dirs.sh --describe`` output (converted by the job);
* ``100k-skew`` / ``1m-skew`` (issue 38's bytes shape): brokers 1–100 given to racks round-robin
  (r0 holds 34), 100 / 1,000 topics of 1,000 partitions placed by Kafka's rack-aware assignment,
  which leaves broker 1 a third of its rack peers' replicas; lognormal sizes (σ 1, 1 GiB mean);
  remove brokers 91–100; sizes.jsonl / raw log-dirs output.

Each run also prints the plan's bytes spread within each rack (after and before) and its notes
(where a rack ends above 10 %, the plan says why).

For each shape and engine it runs, in a fresh process each: the user's command
``kafka-runbook plan decommission --snapshot F --sizes F --throttle 50000000 --engine E`` (wall
time, the job's phases from summary.json, peak RSS of the process) and the DAG's plan step
(``DecommissionPlanOperator.execute`` with a ``local[2]`` Spark connection, which runs the job
as a child process; Airflow's own import is not counted). It checks that both engines wrote the
same plan hash. Inputs are written once into ``--workdir`` and reused.

Run: ``PYTHONPATH=. .venv/bin/python bench/bench_plan_engines.py [--shapes 20k,100k,1m]
[--engines driver,spark] [--workdir /tmp/bench-engines] [--no-dag] [--spark-breakdown]``. Prints figures only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

SHAPES = {
    "20k": dict(brokers=48, racks=3, topics=200, partitions=100, removed=(3, 10, 17), sizes_form="jsonl"),
    "100k": dict(brokers=96, racks=6, topics=1000, partitions=100, removed=(5, 40, 78), sizes_form="jsonl"),
    "1m": dict(brokers=100, racks=3, topics=1000, partitions=1000, removed=tuple(range(0, 100, 10)),
               sizes_form="log-dirs"),
    "100k-skew": dict(brokers=100, racks=3, topics=100, partitions=1000, removed=tuple(range(91, 101)),
                      sizes_form="jsonl", first_id=1, sizes="lognormal"),
    "1m-skew": dict(brokers=100, racks=3, topics=1000, partitions=1000, removed=tuple(range(91, 101)),
                    sizes_form="log-dirs", first_id=1, sizes="lognormal"),
}


def shape_cluster(shape: str):
    """The snapshot and sizes of ``shape`` (seeded: the same every time)."""
    from spark_jobs.synthetic import lognormal_sizes, synthetic_cluster, synthetic_sizes

    s = SHAPES[shape]
    snap = synthetic_cluster(s["brokers"], s["racks"], s["topics"], s["partitions"], 3, seed=3,
                             first_id=s.get("first_id", 0))
    if s.get("sizes") == "lognormal":
        return snap, lognormal_sizes(snap, seed=4)
    return snap, synthetic_sizes(snap, seed=4)

RUN_CLI = """
import resource, subprocess, sys, time
t = time.perf_counter()
code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
use = resource.getrusage(resource.RUSAGE_CHILDREN)
print(code, round(time.perf_counter() - t, 2), round(use.ru_maxrss / 1024), round(use.ru_utime + use.ru_stime, 2))
"""

RUN_DAG_STEP = """
import json, os, shutil, sys, time
from types import SimpleNamespace
os.environ["AIRFLOW_CONN_SPARK_BENCH"] = json.dumps({"conn_type": "spark", "host": "local[2]"})
from procedures.run_folder import RunFolder
from operators.plan.step import DecommissionPlanOperator
snapshot, sizes, root, removed = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
from pathlib import Path
folder = RunFolder.for_run(Path(root), "decommission_brokers", "bench").ensure()
os.symlink(snapshot, folder.snapshot)
os.symlink(sizes, folder.partition_sizes)
op = DecommissionPlanOperator(task_id="plan", spark_conn_id="spark_bench", run_root=root,
                              brokers_to_remove=removed, throttle_bytes_per_sec=50_000_000)
t = time.perf_counter()
out = op.execute({"dag": SimpleNamespace(dag_id="decommission_brokers"), "run_id": "bench"})
print(round(time.perf_counter() - t, 2), out["plan_hash"])
"""


def write_log_dirs(snap, sizes, path: str) -> None:
    """``sizes`` of every replica of ``snap`` as ``kafka-log-dirs.sh --describe`` prints them."""
    from spark_jobs.synthetic import synthetic_log_dirs

    with open(path, "w", encoding="utf-8") as f:
        f.write(synthetic_log_dirs(snap, sizes))


def inputs(shape: str, workdir: str) -> tuple[str, str]:
    """The snapshot and sizes files of ``shape`` (written once)."""
    from formats.sizes_file import write_sizes_file
    from formats.snapshot_file import write_snapshot

    s = SHAPES[shape]
    snap_path = os.path.join(workdir, f"snap-{shape}.jsonl")
    sizes_path = os.path.join(workdir, f"sizes-{shape}." + ("jsonl" if s["sizes_form"] == "jsonl" else "txt"))
    if os.path.exists(snap_path) and os.path.exists(sizes_path):
        return snap_path, sizes_path
    t = time.perf_counter()
    snap, sizes = shape_cluster(shape)
    write_snapshot(snap, snap_path)
    if s["sizes_form"] == "jsonl":
        write_sizes_file(sizes, sizes_path)
    else:
        write_log_dirs(snap, sizes, sizes_path)
    print(f"  inputs for {shape} written in {time.perf_counter() - t:.1f} s "
          f"(snapshot {os.path.getsize(snap_path) / 1e6:.1f} MB, sizes {os.path.getsize(sizes_path) / 1e6:.1f} MB)")
    return snap_path, sizes_path


def cli(shape: str, engine: str, snap: str, sizes: str, workdir: str) -> dict:
    out = os.path.join(workdir, f"plan-{shape}-{engine}")
    shutil.rmtree(out, ignore_errors=True)
    removed = ",".join(str(b) for b in SHAPES[shape]["removed"])
    cmd = [sys.executable, "-W", "ignore", "-m", "cli.main", "plan", "decommission", "--snapshot", snap,
           "--sizes", sizes, "--brokers", removed, "--throttle", "50000000", "--engine", engine, "--out", out]
    load = os.getloadavg()[0]
    res = subprocess.run([sys.executable, "-c", RUN_CLI, *cmd], capture_output=True, text=True, cwd=REPO,
                         timeout=1800)
    code, wall, rss, cpu = res.stdout.split()
    if code != "0":
        raise SystemExit(f"{shape}/{engine}: exit {code}\n{res.stderr[-2000:]}")
    summary = json.load(open(os.path.join(out, "summary.json")))
    return {"wall": float(wall), "cpu": float(cpu), "rss_mb": int(rss), "load": load, "summary": summary}


def dag_step(shape: str, snap: str, sizes: str, workdir: str) -> tuple[float, str]:
    root = os.path.join(workdir, f"dag-{shape}")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    removed = json.dumps(list(SHAPES[shape]["removed"]))
    res = subprocess.run([sys.executable, "-W", "ignore", "-c", RUN_DAG_STEP, snap, sizes, root, removed],
                         capture_output=True, text=True, cwd=REPO, timeout=1800,
                         env={**os.environ, "PYTHONPATH": REPO})
    if res.returncode != 0:
        raise SystemExit(f"{shape}: DAG plan step failed\n{res.stderr[-3000:]}")
    wall, digest = res.stdout.split()[-2:]
    return float(wall), digest


def spark_breakdown(shape: str, snap: str, sizes: str) -> None:
    """Where Spark's read + aggregate goes: each Spark job cold (first in a new session), then the
    same jobs again warm, and the same read in the driver, in one process."""
    from formats.sizes_file import read_sizes_columns
    from spark_jobs.driver_io import load_input_in_driver
    from spark_jobs.plan_job import spark_session
    from spark_jobs.selection import Selection
    from spark_jobs.spark_io import load_input

    sel = Selection.on_brokers(SHAPES[shape]["removed"])
    t = time.perf_counter()
    spark = spark_session("local[2]")
    spark.sparkContext.setLogLevel("ERROR")
    started = time.perf_counter() - t
    times = []
    for _ in range(3):
        t = time.perf_counter()
        load_input(spark, snap, sizes, sel)
        times.append(time.perf_counter() - t)
    t = time.perf_counter()
    spark.range(10).count()
    trivial = time.perf_counter() - t
    spark.stop()
    columns = read_sizes_columns(sizes)
    t = time.perf_counter()
    load_input_in_driver(snap, columns, sel)
    driver = time.perf_counter() - t
    print(f"  Spark breakdown: session start {started:.1f} s; read + aggregate 1st {times[0]:.1f} s, "
          f"2nd {times[1]:.1f} s, 3rd {times[2]:.1f} s (a trivial job on the warm session: {trivial:.2f} s); "
          f"the same read in the driver {driver:.2f} s")


def _pct(by_rack: dict[str, float]) -> str:
    """``r0 1.2%, r1 0.4%``: a within-rack spread per rack, as percentages."""
    return ", ".join(f"{r} {v:.1%}" for r, v in by_rack.items())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default="20k,100k,1m")
    p.add_argument("--engines", default="driver,spark")
    p.add_argument("--workdir", default="/tmp/bench-engines")
    p.add_argument("--no-dag", action="store_true", help="skip the DAG plan step")
    p.add_argument("--spark-breakdown", action="store_true",
                   help="also time Spark's read + aggregate cold and warm in one session (jsonl sizes shapes)")
    args = p.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    for shape in args.shapes.split(","):
        s = SHAPES[shape]
        print(f"== {shape}: {s['brokers']} brokers / {s['racks']} racks / {s['topics'] * s['partitions']:,} "
              f"partitions / RF 3, remove {list(s['removed'])}, sizes as {s['sizes_form']}")
        snap, sizes = inputs(shape, args.workdir)
        hashes = {}
        for engine in args.engines.split(","):
            r = cli(shape, engine, snap, sizes, args.workdir)
            sm = r["summary"]
            hashes[engine] = sm["plan_hash"]
            after = sm["balance_after"]
            print(f"  CLI --engine {engine}: {r['wall']:.1f} s wall, {r['cpu']:.1f} s CPU, peak RSS {r['rss_mb']} MB "
                  f"(load {r['load']:.2f}); phases {sm['timings_s']}; moves {sm['replica_moves']} (lower bound "
                  f"{sm['replica_moves_lower_bound']}), replica spread {after['replica_spread']} (within racks "
                  f"{after['replica_spread_within_rack']}), leader spread {after['leader_spread']}, hash "
                  f"{sm['plan_hash'][:12]}")
            print(f"    bytes spread within racks {_pct(after['bytes_relative_spread_within_rack'])} (before "
                  f"{_pct(sm['balance_before']['bytes_relative_spread_within_rack'])}); notes: {sm['notes'] or 'none'}")
        if len(set(hashes.values())) > 1:
            print(f"  !! engines disagree: {hashes}")
        if args.spark_breakdown and SHAPES[shape]["sizes_form"] == "jsonl":
            spark_breakdown(shape, snap, sizes)
        if not args.no_dag:
            wall, digest = dag_step(shape, snap, sizes, args.workdir)
            same = "same hash" if digest in hashes.values() else f"hash {digest[:12]} differs"
            print(f"  DAG plan step (engine auto, local[2] connection): {wall:.1f} s ({same})")


if __name__ == "__main__":
    main()
