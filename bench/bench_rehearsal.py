"""Rehearsal benchmark: wall time and memory of ``kafka-runbook rehearse`` at a given cluster size.

For ``--partitions N`` (topics of 100 partitions, RF 3, ``--brokers`` in 3 racks, Pareto-skewed
sizes of mean ``--mean-gib``), it writes a snapshot and a sizes file, plans the decommission of
the last two brokers in a child process (``python -m spark_jobs.plan_job``, driver engine,
100 MiB/s, ``--max-moves-per-broker``), then rehearses the plan in another child process as the
decommission runbook's ``rehearse`` step does (leadership demoted off the removed brokers first; the
real path: a private embedded ZooKeeper on 127.0.0.1, the emulator seeded from the snapshot, the
executor driven at simulated speed) and prints: partitions, moves, waves, simulated hours, the
rehearsal's wall seconds per phase (inputs, seed, drive, total), its CPU seconds (and the private
ZooKeeper's), the child's peak RSS and the load, then the row for BENCHMARKS.md's table.
Figures go to BENCHMARKS.md; nothing is asserted. ``python -m bench.bench_rehearsal
--partitions 20000``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _prepare(d: Path, brokers: int, partitions: int, mean_gib: float, moves: int) -> dict:
    from formats.sizes_file import write_sizes_file
    from formats.snapshot_file import write_snapshot
    from spark_jobs.synthetic import synthetic_cluster, synthetic_sizes

    snap = synthetic_cluster(brokers, 3, max(1, partitions // 100), min(100, partitions), 3, seed=3)
    write_snapshot(snap, str(d / "snapshot.jsonl"))
    write_sizes_file(synthetic_sizes(snap, seed=4, mean=int(mean_gib * 1024 ** 3)), str(d / "sizes.jsonl"))
    removed = ",".join(str(b) for b in sorted(snap.brokers)[-2:])
    t = time.monotonic()
    subprocess.run([sys.executable, "-m", "spark_jobs.plan_job", "--snapshot", str(d / "snapshot.jsonl"),
                    "--op", "decommission", "--brokers", removed, "--sizes", str(d / "sizes.jsonl"),
                    "--out", str(d / "plan"), "--engine", "driver", "--throttle", str(100 * 1024 ** 2),
                    "--max-moves-per-broker", str(moves)], check=True, cwd=REPO, capture_output=True)
    summary = json.loads((d / "plan" / "summary.json").read_text())
    return {"partitions": snap.partition_count, "moves": summary["moves"], "waves": summary["waves"],
            "predicted_h": summary["predicted_seconds"] / 3600, "plan_s": time.monotonic() - t, "removed": removed}


def _child(d: str, demote: str) -> None:
    from cli.rehearsal_run import RehearsalInput, rehearse

    t = time.monotonic()
    r = rehearse(RehearsalInput(snapshot=f"{d}/snapshot.jsonl", sizes=f"{d}/sizes.jsonl", plan_dir=f"{d}/plan",
                                out_dir=f"{d}/rehearsal", demote=tuple(int(b) for b in demote.split(",") if b)))
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"headline": r.headline(), "wall_s": time.monotonic() - t, "timings": r.timings_s,
                      "speed": r.speed, "copying_h": r.copying_s / 3600, "elapsed_h": r.elapsed_s / 3600,
                      "problems": list(r.problems), "seeded": r.seeded,
                      "cpu_s": me.ru_utime + me.ru_stime, "zookeeper_cpu_s": kids.ru_utime + kids.ru_stime,
                      "max_rss_mib": me.ru_maxrss / 1024, "zookeeper_rss_mib": kids.ru_maxrss / 1024}))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--partitions", type=int, default=3000)
    p.add_argument("--brokers", type=int, default=6)
    p.add_argument("--mean-gib", type=float, default=1.0)
    p.add_argument("--max-moves-per-broker", type=int, default=250)
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--demote", default="", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        _child(args.child, args.demote)
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-rehearsal-") as tmp:
        d = Path(tmp)
        plan = _prepare(d, args.brokers, args.partitions, args.mean_gib, args.max_moves_per_broker)
        print(f"cluster: {plan['partitions']:,} partitions on {args.brokers} brokers; plan: {plan['moves']:,} moves "
              f"in {plan['waves']} waves, planner {plan['predicted_h']:.2f} h ({plan['plan_s']:.0f} s to plan)",
              flush=True)
        out = subprocess.run([sys.executable, "-m", "bench.bench_rehearsal", "--child", str(d),
                              "--demote", plan["removed"]], cwd=REPO, capture_output=True, text=True)
        if out.returncode != 0:
            print(out.stderr[-3000:], file=sys.stderr)
            return 1
        r = json.loads(out.stdout.strip().splitlines()[-1])
    with open("/proc/loadavg", encoding="ascii") as f:
        load = f.read().split()[0]
    t = r["timings"]
    print(f"{r['headline']}\nseeded: {r['seeded']}\nrehearsal wall {r['wall_s']:.0f} s (inputs+ZooKeeper "
          f"{t['inputs_and_zookeeper']:.0f} s, seed {t['seed']:.0f} s, drive {t['drive']:.0f} s) at x{r['speed']:g}; "
          f"CPU {r['cpu_s']:.0f} s (+ ZooKeeper {r['zookeeper_cpu_s']:.0f} s); copying {r['copying_h']:.2f} h simulated; "
          f"peak RSS {r['max_rss_mib']:.0f} MiB (ZooKeeper {r['zookeeper_rss_mib']:.0f} MiB); load {load}")
    for problem in r["problems"]:
        print(f"  problem: {problem}")
    print("BENCHMARKS row: "
          f"| {plan['partitions']:,} ({args.brokers} brokers) | {plan['moves']:,} / {plan['waves']} | "
          f"{r['copying_h']:.2f} h (planner {plan['predicted_h']:.2f} h) | {r['wall_s']:.0f} s "
          f"({t['inputs_and_zookeeper']:.0f} / {t['seed']:.0f} / {t['drive']:.0f} s) at x{r['speed']:g} | "
          f"{r['cpu_s']:.0f} s + ZooKeeper {r['zookeeper_cpu_s']:.0f} s | {r['max_rss_mib']:.0f} MiB | {load} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
