"""The seeded randomized fault campaign, long profile: N decommission runs (or, with ``--runbook
rolling_restart``, N rolls), each under one fault drawn from its seed, each checked with plain kazoo
(see ``tests/campaign/runner.py`` and ``tests/campaign/roll_runner.py`` for what a run exercises and
what it does not).

Usage: ``PYTHONPATH=. python bench/bench_fault_campaign.py [--runbook rolling_restart] [--runs 54]
[--first-seed 1000]``, or ``--seeds 17 42`` to rerun given seeds (``--fault kill_for_good`` forces the kind). Prints one
line per run, then the figures: runs, per-fault outcome counts, invariants broken, % of runs
ending in the state the fault calls for, wall time. Exit status 1 if an invariant broke.
"""

from __future__ import annotations

import argparse
import collections
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runbook", choices=("decommission_brokers", "rolling_restart"), default="decommission_brokers")
    p.add_argument("--runs", type=int, default=54)
    p.add_argument("--first-seed", type=int, default=1000)
    p.add_argument("--seeds", type=int, nargs="*", help="run exactly these seeds")
    p.add_argument("--fault", default=None, help="force this fault kind")
    args = p.parse_args(argv)
    os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING")
    from tests.airflow_env import configure_env, ensure_db

    configure_env()
    ensure_db()
    logging.getLogger("airflow").setLevel(logging.WARNING)
    from kafka_sim.zookeeper_server import EmbeddedZooKeeper
    if args.runbook == "rolling_restart":
        from tests.campaign.roll_runner import run_seeds
        from tests.campaign.roll_scenario import FAULTS
    else:
        from tests.campaign.runner import run_seeds
        from tests.campaign.scenario import FAULTS

    seeds = args.seeds if args.seeds else list(range(args.first_seed, args.first_seed + args.runs))
    started = time.monotonic()
    with EmbeddedZooKeeper() as server, tempfile.TemporaryDirectory(prefix="kr-campaign-") as tmp:
        outcomes = run_seeds(seeds, server.host, server.port, Path(tmp), args.fault,
                             log=lambda s: print(s, flush=True))
    wall = time.monotonic() - started
    by_fault: dict[str, collections.Counter] = {f: collections.Counter() for f in FAULTS}
    for o in outcomes:
        by_fault[o.fault][o.observed if o.correct else f"WRONG:{o.observed}"] += 1
    broken = [o for o in outcomes if o.invariant_problems]
    correct = sum(o.correct for o in outcomes)
    print(f"\nruns: {len(outcomes)}   wall: {wall:.0f}s ({wall / max(len(outcomes), 1):.1f}s/run)")
    print(f"runs with an invariant broken: {len(broken)}"
          + (f" (seeds {[o.seed for o in broken]})" if broken else ""))
    print(f"end state as the fault calls for: {correct}/{len(outcomes)} = {100 * correct / max(len(outcomes), 1):.1f}%")
    print("| fault | runs | outcomes |")
    print("|---|---|---|")
    for fault, counts in by_fault.items():
        if counts:
            print(f"| {fault} | {sum(counts.values())} | "
                  + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) + " |")
    wrong = [o for o in outcomes if not o.correct]
    for o in wrong:
        print(f"wrong end state: seed {o.seed} ({o.fault}): {o.observed}; repro: {o.repro}")
    return 1 if broken else 0


if __name__ == "__main__":
    raise SystemExit(main())
