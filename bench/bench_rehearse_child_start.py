"""CPU seconds a rehearsal child spends before it starts work: what every ``rehearse`` step pays.

The runbooks' ``rehearse`` step launches ``python -m cli.main rehearse ...`` (:mod:`cli.rehearse`)
as a child process. This starts that same command ``--runs`` times with a plan folder that holds
no plan: the child loads everything its run needs (the CLI, the rehearsal, the executor, the
emulator), then refuses the plan on its first input check and exits 1 — so its whole CPU time
(user + system, the kernel's own accounting of the reaped child, :func:`os.wait4`) is its start-up
cost. It also says whether the child loaded Airflow (``-X importtime`` on one extra run) and whether
Python may cache bytecode (``PYTHONDONTWRITEBYTECODE`` set: every module is compiled at every start,
which more than doubles the figure).
Prints min / median / max; nothing is asserted (BENCHMARKS.md, "Rehearsal child start").
``python -m bench.bench_rehearse_child_start --runs 7``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _argv(d: Path) -> list[str]:
    (d / "plan").mkdir(exist_ok=True)
    (d / "snapshot.jsonl").write_text("")
    return [sys.executable, "-m", "cli.main", "rehearse", "--snapshot", str(d / "snapshot.jsonl"),
            "--plan-dir", str(d / "plan"), "--out", str(d / "out")]


def child_cpu(argv: list[str]) -> tuple[float, int]:
    """(user + system seconds, exit status) of one child, from the kernel's accounting."""
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime, proc.returncode


def loads_airflow(argv: list[str]) -> bool:
    out = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], cwd=REPO, capture_output=True, text=True)
    return any(line.rstrip().endswith(("| airflow", "|   airflow")) or line.split("|")[-1].strip() == "airflow"
               for line in out.stderr.splitlines())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        argv = _argv(Path(tmp))
        child_cpu(argv)                                   # warm the page cache and .pyc files
        runs = [child_cpu(argv) for _ in range(args.runs)]
        codes = {code for _, code in runs}
        cpu = sorted(c for c, _ in runs)
        print(f"rehearse child start: cpu s min {cpu[0]:.2f} median {statistics.median(cpu):.2f} max {cpu[-1]:.2f} "
              f"over {len(cpu)} runs (exit {sorted(codes)}; 1 = the empty plan refused after start-up); "
              f"loads airflow: {loads_airflow(argv)}; bytecode cache: "
              f"{'off (PYTHONDONTWRITEBYTECODE)' if os.environ.get('PYTHONDONTWRITEBYTECODE') else 'on'}; "
              f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
