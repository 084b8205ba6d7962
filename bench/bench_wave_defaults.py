"""Waves without a per-broker cap (the default since issue 38) beside the old default cap of 5.

For each shape of bench/bench_plan_engines.py (its inputs, written once into ``--workdir``) it runs
``kafka-runbook plan decommission --snapshot F --sizes F --throttle 50000000 --engine driver``
twice in fresh processes, once as is and once with ``--max-moves-per-broker 5``, and prints per
run: waves, the predicted copying at the throttle and the estimated run (first write to last wave
done: copying + fixed costs + gaps between waves, planning/wave_time.py), the physical
lower bound, what shaped the waves (summary.json's ``waves_shaped_by``), the plan hash, and the
command's wall and CPU seconds (user + system of the process and its children: robust to a loaded
machine where wall time is not) with the load average. Figures only, no assertions.

Run: ``PYTHONPATH=. .venv/bin/python bench/bench_wave_defaults.py [--shapes 20k,100k,1m] [--caps none,5] [--workdir D]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from bench.bench_plan_engines import RUN_CLI, SHAPES, inputs  # noqa: E402


def plan(shape: str, snap: str, sizes: str, workdir: str, cap: int | None) -> dict:
    out = os.path.join(workdir, f"waves-{shape}-{cap or 'free'}")
    shutil.rmtree(out, ignore_errors=True)
    removed = ",".join(str(b) for b in SHAPES[shape]["removed"])
    cmd = [sys.executable, "-W", "ignore", "-m", "cli.main", "plan", "decommission", "--snapshot", snap,
           "--sizes", sizes, "--brokers", removed, "--throttle", "50000000", "--engine", "driver", "--out", out]
    if cap is not None:
        cmd += ["--max-moves-per-broker", str(cap)]
    load = os.getloadavg()[0]
    res = subprocess.run([sys.executable, "-c", RUN_CLI, *cmd], capture_output=True, text=True, cwd=REPO,
                         timeout=3600)
    code, wall, rss, cpu = res.stdout.split()
    if code != "0":
        raise SystemExit(f"{shape} cap {cap}: exit {code}\n{res.stderr[-2000:]}")
    summary = json.load(open(os.path.join(out, "summary.json")))
    return {"wall": float(wall), "cpu": float(cpu), "rss_mb": int(rss), "load": load, "summary": summary}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="20k,100k,1m")
    ap.add_argument("--workdir", default="/tmp/bench-wave-defaults")
    ap.add_argument("--caps", default="none,5", help="the caps to plan with (none: no cap)")
    args = ap.parse_args(argv)
    os.makedirs(args.workdir, exist_ok=True)
    print("| shape | cap | waves | predicted copying s | estimated run s | lower bound s | plan hash | wall s "
          "| CPU s | load | what shaped the waves |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for shape in args.shapes.split(","):
        snap, sizes = inputs(shape, args.workdir)
        for cap in (None if c == "none" else int(c) for c in args.caps.split(",")):
            r = plan(shape, snap, sizes, args.workdir, cap)
            s = r["summary"]
            est = (s.get("estimate") or {}).get("total_s")
            print(f"| {shape} | {cap or 'none'} | {s['waves']:,} | {s['predicted_seconds']:,.0f} "
                  f"| {est:,.0f} | {s['lower_bound_seconds']:,.0f} | {s['plan_hash'][:12]} | {r['wall']:.1f} "
                  f"| {r['cpu']:.1f} | {r['load']:.1f} | {(s.get('waves_shaped_by') or {}).get('text')} |",
                  flush=True)


if __name__ == "__main__":
    main()
