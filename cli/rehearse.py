"""``kafka-runbook rehearse``: run a plan on an emulated copy of the cluster, without Airflow.

``kafka-runbook rehearse --snapshot SNAPSHOT --sizes LOG_DIRS --plan-dir PLAN [--capacity FILE]
[--windows FILE --cluster CONN_ID --runbook DAG_ID] [--start ISO_TIME] [--throttle BYTES_PER_S]
[--demote BROKERS] [--outside-window]
--out DIR`` seeds the emulator from the snapshot and sizes on a private ZooKeeper it starts on
127.0.0.1 (``--zookeeper HOST:PORT``: a fresh chroot on a ZooKeeper kept for rehearsals instead),
runs the plan's waves with the runbooks' own executor code at simulated speed, as if execution
started at ``--start`` (default now), and prints the headline; the report is
``DIR/rehearsal.md`` (and ``rehearsal.json``). The real cluster is never contacted.

Exit status: 0 when the rehearsal passed, 1 when it found problems (they are printed) or an
input was refused (one ``Error:`` line, nothing started).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from datetime import datetime, timezone

from kafka_zk.errors import InvalidInput


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("rehearse", help="rehearse a plan on an emulated copy of the cluster",
                              description=__doc__.splitlines()[0])
    p.add_argument("--snapshot", required=True, help="the cluster's snapshot.jsonl (kafka-runbook plan --out saves it)")
    p.add_argument("--sizes", default=None, metavar="LOG_DIRS",
                   help="partition sizes: kafka-log-dirs.sh --describe output or a sizes.jsonl")
    p.add_argument("--plan-dir", required=True, help="the plan folder (kafka-runbook plan --out)")
    p.add_argument("--capacity", default=None, help="broker disks (the plan's capacity file)")
    p.add_argument("--windows", default=None, metavar="FILE", help="the maintenance-windows YAML to obey")
    p.add_argument("--cluster", default="rehearsal", metavar="CONN_ID",
                   help="the cluster's name in the windows file (the runbooks' zk_conn_id)")
    p.add_argument("--runbook", default="decommission_brokers", help="the runbook the windows must admit")
    p.add_argument("--start", default=None, metavar="ISO_TIME",
                   help="when execution would start, e.g. 2026-12-01T01:00:00+00:00 (default: now)")
    p.add_argument("--throttle", default=None, metavar="BYTES_PER_S", help="default: the plan's")
    p.add_argument("--wave-timeout", type=float, default=6 * 3600.0, metavar="S")
    p.add_argument("--stall-timeout", type=float, default=3600.0, metavar="S",
                   help="simulated seconds without progress before a wave counts as stalled")
    p.add_argument("--between-windows", choices=("keep", "remove"), default="keep")
    p.add_argument("--outside-window", action="store_true",
                   help="a manual emergency run: the windows do not hold the waves back (the runbooks' outside_window)")
    p.add_argument("--demote", default="", metavar="BROKERS",
                   help="decommission: move leadership off these brokers first, as the runbook's demote step does")
    p.add_argument("--poll-interval", type=float, default=5.0, metavar="S",
                   help="the run's poll_interval_s: when its executor sees a wave done (the gaps between waves)")
    p.add_argument("--speed", type=float, default=None, help="simulated seconds per wall second (default: chosen)")
    p.add_argument("--zookeeper", default=None, metavar="HOST:PORT",
                   help="a private ZooKeeper to take a fresh chroot on (default: start one on 127.0.0.1)")
    p.add_argument("--out", required=True, help="folder for the rehearsal's report and working files")
    p.set_defaults(func=run)


def _start(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(f"--start {text!r} is not an ISO time; e.g. 2026-12-01T01:00:00+00:00") from None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _poll(value: float) -> float:
    if not value > 0:
        raise InvalidInput(f"--poll-interval {value!r} must be > 0 seconds (the run's poll_interval_s)")
    return float(value)


def run(args: argparse.Namespace) -> int:
    # local: a subcommand loads only what it runs (CLI start-up)
    from kafka_zk.validation import check_brokers_to_remove, parse_throttle
    from cli.rehearsal_run import RehearsalInput, rehearse
    from procedures.windows.spec import load_windows_file

    rate = None if args.throttle is None else parse_throttle(args.throttle, "--throttle")
    inp = RehearsalInput(
        snapshot=args.snapshot, sizes=args.sizes, plan_dir=args.plan_dir, out_dir=args.out, capacity=args.capacity,
        windows=load_windows_file(args.windows) if args.windows else None, cluster=args.cluster,
        runbook=args.runbook, throttle_bytes_per_s=rate, start_at=_start(args.start), speed=args.speed,
        wave_timeout_s=args.wave_timeout, stall_timeout_s=args.stall_timeout, between_windows=args.between_windows,
        outside_window=args.outside_window, poll_interval_s=_poll(args.poll_interval),
        demote=tuple(check_brokers_to_remove(args.demote, "--demote")) if args.demote else ())
    with contextlib.redirect_stdout(sys.stderr):     # the executor's progress lines: stderr; the headline: stdout
        report = rehearse(inp, zookeeper=args.zookeeper)
    print(report.headline())
    for problem in report.problems:
        print(f"  problem: {problem}")
    print(f"  report: {args.out}/rehearsal.md", file=sys.stderr)
    return 0 if report.passed else 1
