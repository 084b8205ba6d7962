"""CPU a real-Airflow test stack (:class:`tests.real_airflow.RealAirflow`) burns while nothing runs.

Starts the four components on a private home with the runbooks asked for (default: all of them, as
tests/dags/test_ui_trigger_forms.py does), waits until the API serves every one, then reads each
component's CPU seconds (the process and its descendants, from ``/proc``) over ``--window`` seconds
of idling. Prints one Markdown row for BENCHMARKS.md. The real-Airflow tests keep such a stack up
for minutes while they wait on runs and pages, so what it burns idle is paid for each of them.

    PYTHONPATH=. .venv/bin/python bench/bench_airflow_stack_idle.py [--dags a,b] [--window 60]

Fails (exit 1) when a component exits; on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(entry))
    return kids


def tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and its live descendants, each with its reaped children."""
    kids, total, todo = _children(), 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(f) for f in fields[11:15]) / TICK
        except (OSError, IndexError, ValueError):
            pass
        todo += kids.get(p, [])
    return total


def main() -> int:
    sys.path.insert(0, str(REPO))
    from tests.real_airflow import RealAirflow

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dags", default="", help="comma-separated DAG ids (default: every runbook)")
    ap.add_argument("--window", type=float, default=60.0, help="idle seconds measured")
    args = ap.parse_args()
    dags = tuple(d for d in args.dags.split(",") if d) or tuple(
        sorted(p.stem for p in (REPO / "dags").glob("*.py") if p.stem != "__init__"))
    home = Path(tempfile.mkdtemp(prefix="bench-airflow-idle-"))
    started = time.monotonic()
    with RealAirflow(home / "airflow", dags, {}) as airflow:
        for dag_id in dags:
            airflow.wait_dag(dag_id, unpause=False)
        served = time.monotonic() - started
        before = {name: tree_cpu(p.pid) for name, p in airflow.procs.items()}
        time.sleep(args.window)
        after = {name: tree_cpu(p.pid) for name, p in airflow.procs.items()}
        dead = [name for name, p in airflow.procs.items() if p.poll() is not None]
    if dead:
        print(f"component(s) {dead} exited", file=sys.stderr)
        return 1
    per_min = {name: (after[name] - before[name]) * 60.0 / args.window for name in after}
    cells = " | ".join(f"{per_min[name]:.1f}" for name in sorted(per_min))
    print(f"| {len(dags)} | {served:.0f} | {cells} | {sum(per_min.values()):.1f} |  "
          f"(columns: DAGs, s until served, {', '.join(sorted(per_min))}, total; CPU s per idle minute)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
