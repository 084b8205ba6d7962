"""The whole command a user types, ZooKeeper read included, beside Kafka's ``--generate`` logic.

Loads a synthetic cluster (the shapes of bench/bench_plan_engines.py: Kafka-placed topics,
Pareto sizes) into a private ZooKeeper 3.8 (broker registrations, topic znodes, partition
state znodes, written in multi transactions), writes its sizes as raw
``kafka-log-dirs.sh --describe`` output, then times, each in a fresh process:

* ``kafka-runbook plan decommission --zookeeper … --brokers … --sizes <raw> --throttle …``
  (the phases come from the plan's summary.json: ``zk_assignments``, ``zk_states``,
  ``sizes_driver``, ``driver_input``, ``states_wait``, kernel, waves);
* ``bench/kafka_generate.py`` on the same cluster: Kafka 2.4's ``--generate`` (brokers and topic
  znodes read, AdminUtils placement over the kept brokers; no JVM start).

Prints, per command, wall seconds, CPU seconds (user + system, the sizes child included: robust
to a loaded machine where wall time is not) and peak RSS, the median of ``--runs`` after one
warm-up, as a Markdown table row for BENCHMARKS.md, with the load average; then the last plan's
balance (replica, leader and within-rack bytes spreads), predicted duration, hash and notes.
The commands run with bytecode caching on (``PYTHONDONTWRITEBYTECODE`` removed from their environment, as an installed
package runs). ``--zk-heap`` sets the embedded server's heap (default 4g for ``1m`` and ``1m-skew``:
two million znodes do not fit 512 MB). ``--serve`` instead
keeps the populated server up and prints both commands (for timing them from outside), until
stdin closes; ``--zookeeper HOST:PORT`` then times against that server (no load: at 1m the load
takes 1–2 min). Figures only, no assertions.

``--max-moves-per-broker N`` passes a cap (the hashes recorded before issue 38 were made with the
then default, 5); ``--ours-only`` skips Kafka's logic (its columns then repeat ours).

Usage: ``python bench/bench_plan_zk.py [--shape 20k|100k|1m|100k-skew|1m-skew] [--runs 3] [--workdir D] [--zk-heap 4g]
[--max-moves-per-broker N] [--ours-only] [--serve | --zookeeper HOST:PORT]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from contextlib import nullcontext
from dataclasses import dataclass
from types import SimpleNamespace

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from bench.bench_plan_engines import SHAPES, _pct, shape_cluster, write_log_dirs  # noqa: E402
from kafka_zk import paths  # noqa: E402
from kafka_sim.zookeeper_server import EmbeddedZooKeeper  # noqa: E402

TXN = 400       # creates per multi transaction


def populate(zk, snap) -> None:
    """Registrations (ephemeral, held by ``zk``), topic znodes and state znodes of ``snap``."""
    for p in ("/brokers/ids", "/brokers/topics", "/config/topics", "/config/brokers", "/admin/delete_topics"):
        zk.ensure_path(p)
    for b, br in snap.brokers.items():
        zk.create(paths.broker(b), json.dumps({
            "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"}, "endpoints": [f"PLAINTEXT://{br.host}:9092"],
            "jmx_port": -1, "host": br.host, "port": 9092, "version": 4, "timestamp": "1600000000000",
            "rack": br.rack}).encode(), ephemeral=True)
    ops = []
    for name, t in snap.topics.items():
        ops.append((paths.topic(name), json.dumps({"version": 1, "partitions": {
            str(p): list(part.replicas) for p, part in t.partitions.items()}}).encode()))
        ops.append((paths.topic_config(name), b'{"version":1,"config":{}}'))
        ops.append((paths.topic_partitions(name), b""))
        for p, part in t.partitions.items():
            ops.append((paths.partition(name, p), b""))
            ops.append((paths.partition_state(name, p), json.dumps({
                "controller_epoch": 1, "leader": part.leader, "version": 1, "leader_epoch": 0,
                "isr": list(part.isr)}).encode()))
    pending = []
    for i in range(0, len(ops), TXN):
        txn = zk.transaction()
        for path, data in ops[i:i + TXN]:
            txn.create(path, data)
        pending.append(txn.commit_async())
        if len(pending) >= 16:
            pending.pop(0).get(timeout=120)
    for r in pending:
        r.get(timeout=120)


ZK_HEAP = {"1m": "4g", "1m-skew": "4g"}   # the embedded server's -Xmx by shape (else 512m): 1m is 2M znodes


@dataclass(frozen=True)
class Run:
    """One command in its own process: wall seconds, CPU seconds (user + system, its reaped
    children included: the sizes child), peak RSS of the largest of them (MiB)."""

    wall: float
    cpu: float
    rss_mib: float


def _timed(cmd: list[str], env: dict[str, str], timeout: float = 1800) -> Run:
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, env=env)
    watchdog = threading.Timer(timeout, proc.kill)
    watchdog.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)      # rusage of the process and its reaped children
    finally:
        watchdog.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd[:6])} ... exited with {proc.returncode}")
    return Run(time.perf_counter() - t, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def _med(runs: list[Run], field: str) -> str:
    values = [getattr(r, field) for r in runs]
    return f"{statistics.median(values):.2f} ({', '.join(f'{v:.2f}' for v in values)})"


def main(argv: list[str] | None = None) -> None:
    from kazoo.client import KazooClient

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", choices=sorted(SHAPES), default="20k")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", default="/tmp/bench-plan-zk")
    ap.add_argument("--zk-heap", default=None, help="the embedded ZooKeeper's heap, -Xmx (default: 4g for 1m, "
                    "else 512m)")
    ap.add_argument("--serve", action="store_true")
    ap.add_argument("--max-moves-per-broker", type=int, default=None, help="pass this cap to the plan (default: "
                    "none, the command's default: waves sized by bytes and time); 5 was the default before issue 38")
    ap.add_argument("--ours-only", action="store_true", help="time only kafka-runbook plan (not Kafka's logic)")
    ap.add_argument("--zookeeper", default=None, help="time against this server, already populated by a "
                    "`--serve` run of the same --shape and --workdir (still serving): no load, no embedded server")
    args = ap.parse_args(argv)
    s = SHAPES[args.shape]
    os.makedirs(args.workdir, exist_ok=True)
    sizes_path = os.path.join(args.workdir, f"log-dirs-{args.shape}.txt")
    snap = sizes = None
    if not args.zookeeper or not os.path.exists(sizes_path):
        snap, sizes = shape_cluster(args.shape)
        if not os.path.exists(sizes_path):
            write_log_dirs(snap, sizes, sizes_path)
    removed = ",".join(str(b) for b in s["removed"])
    # the commands as an installed package runs them: compiled modules cached (a shell with
    # PYTHONDONTWRITEBYTECODE=1 recompiles every project module on every start, ~0.5 s of CPU)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    heap = args.zk_heap or ZK_HEAP.get(args.shape, "512m")
    running = SimpleNamespace(connect_string=args.zookeeper) if args.zookeeper else None
    with nullcontext(running) if running else EmbeddedZooKeeper(heap=heap) as server:
        zk = KazooClient(hosts=server.connect_string, timeout=30)
        zk.start(timeout=30)
        if running:
            print(f"{args.shape}: timing against the running server {args.zookeeper}", flush=True)
        else:
            t = time.perf_counter()
            populate(zk, snap)
            print(f"{args.shape}: {len(snap.brokers)} brokers, {sum(len(t.partitions) for t in snap.topics.values())} "
                  f"partitions in {len(snap.topics)} topics loaded into ZooKeeper 3.8 (heap {heap}) in "
                  f"{time.perf_counter() - t:.1f} s; raw log-dirs sizes {os.path.getsize(sizes_path) / 1e6:.1f} MB",
                  flush=True)
        del snap, sizes
        out = os.path.join(args.workdir, f"plan-{args.shape}")
        ours = [sys.executable, "-W", "ignore", "-m", "cli.main", "plan", "decommission", "--zookeeper",
                server.connect_string, "--brokers", removed, "--sizes", sizes_path, "--throttle", "50000000",
                "--out", out]
        if args.max_moves_per_broker is not None:
            ours += ["--max-moves-per-broker", str(args.max_moves_per_broker)]
        kafkas = [sys.executable, "bench/kafka_generate.py", "--zookeeper", server.connect_string, "--remove", removed,
                  "--out", os.path.join(args.workdir, f"generate-{args.shape}.txt")]
        if args.serve:
            print("kafka-runbook:", " ".join(ours))
            print("Kafka --generate logic:", " ".join(kafkas), flush=True)
            sys.stdin.read()
            return
        figures: dict[str, list[Run]] = {"ours": [], "kafka": []}
        phases: list[dict[str, float]] = []
        cpu_phases: list[dict[str, float]] = []     # the command's own CPU per driver phase (summary's cpu_s)
        loads = []
        for run in range(args.runs + 1):
            shutil.rmtree(out, ignore_errors=True)
            loads.append(os.getloadavg()[0])
            mine = _timed(ours, env)
            theirs = mine if args.ours_only else _timed(kafkas, env)
            if run:         # the first pair is the warm-up (and writes the compiled modules)
                figures["ours"].append(mine)
                figures["kafka"].append(theirs)
                done = json.load(open(os.path.join(out, "summary.json")))
                phases.append(done["timings_s"])
                cpu_phases.append(done.get("cpu_s", {}))
            print(f"  run {run or 'warm-up'}: ours {mine.wall:.2f} s wall / {mine.cpu:.2f} s CPU, "
                  f"Kafka's {theirs.wall:.2f} s / {theirs.cpu:.2f} s", flush=True)
        zk.stop()
        zk.close()
    summary = json.load(open(os.path.join(out, "summary.json")))
    ours_runs, kafka_runs = figures["ours"], figures["kafka"]
    keys = list(phases[0])
    phase_text = ", ".join(f"{k} {statistics.median(p.get(k, 0) for p in phases):.2f}" for k in keys)
    if cpu_phases and cpu_phases[0]:
        phase_text += "; its CPU: " + ", ".join(f"{k} {statistics.median(p.get(k, 0) for p in cpu_phases):.2f}"
                                                for k in cpu_phases[0])
    print(f"\n{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, load average {min(loads):.1f}-{max(loads):.1f}, "
          f"median (each run) of {args.runs} runs after a warm-up; "
          f"`python bench/bench_plan_zk.py --shape {args.shape} --runs {args.runs}`\n")
    print("| shape | `kafka-runbook plan decommission --zookeeper … --sizes <raw>` wall s | its CPU s | its peak RSS "
          "| Kafka `--generate` logic (port, no JVM) wall s | its CPU s | phases of ours (median s) | moves |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    print(f"| {args.shape}, load {min(loads):.1f}-{max(loads):.1f} | {_med(ours_runs, 'wall')} | {_med(ours_runs, 'cpu')} "
          f"| {statistics.median(r.rss_mib for r in ours_runs):.0f} MiB | {_med(kafka_runs, 'wall')} "
          f"| {_med(kafka_runs, 'cpu')} | {phase_text} | {summary['replica_moves']} "
          f"(lower bound {summary['replica_moves_lower_bound']}) |")
    after = summary["balance_after"]
    print(f"\nreplica spread {after['replica_spread']} (within racks {after['replica_spread_within_rack']}), leader "
          f"spread {after['leader_spread']}; bytes spread within racks {_pct(after['bytes_relative_spread_within_rack'])} "
          f"(before {_pct(summary['balance_before']['bytes_relative_spread_within_rack'])}); predicted "
          f"{summary['predicted_seconds']:.0f} s at the throttle in {summary['waves']} waves; plan hash "
          f"{summary['plan_hash'][:12]}; notes: {summary['notes'] or 'none'}")
    print(f"cap: {args.max_moves_per_broker or 'none'}; waves: {(summary.get('waves_shaped_by') or {}).get('text')}")


if __name__ == "__main__":
    main()
