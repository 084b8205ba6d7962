"""``kafka-runbook verify-replicas``: ``kafka-replica-verification.sh`` without a JVM.

Same options as Kafka 2.4.1's tool (``--broker-list``, ``--topic-white-list``, ``--fetch-size``,
``--max-wait-ms``, ``--time``, ``--report-interval-ms``) and the same lines ("verification
process is started.", "max lag is ...", the mismatch lines), then a summary. Unlike the
original it ends once everything fetchable is verified (``--max-rounds`` bounds it further).

Exit status: 0 when the replicas match (lag is reported, not an error), 1 on a mismatch or a
corrupt replica (each named: partition, offset, replicas; a corrupt partition stops there, the
others are verified to the end), 2 when verification could not run (bad option, a broker
down or not answering within the --max-wait-ms bound, no topic matching): one ``Error:`` line.
"""

from __future__ import annotations

import argparse
import sys

from replica_verify.compare import Mismatch
from replica_verify.errors import VerifyError
from replica_verify.options import (DEFAULT_FETCH_SIZE, DEFAULT_MAX_WAIT_MS, DEFAULT_REPORT_INTERVAL_MS,
                                    build_options)
from replica_verify.verifier import Summary, max_lag_line, stamp, verify


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("verify-replicas", help="check that all replicas hold the same data (over the Kafka protocol)",
                       description=__doc__.splitlines()[0])
    p.add_argument("--broker-list", required=True, metavar="HOST:PORT,...",
                   help="REQUIRED: brokers to bootstrap from (any live broker of the cluster)")
    p.add_argument("--topic-white-list", default=".*", metavar="REGEX",
                   help="topics to verify, a regex matching the whole name (default: all topics)")
    p.add_argument("--fetch-size", type=int, default=DEFAULT_FETCH_SIZE, metavar="BYTES",
                   help=f"bytes fetched per partition and request (default {DEFAULT_FETCH_SIZE})")
    p.add_argument("--max-wait-ms", type=int, default=DEFAULT_MAX_WAIT_MS, metavar="MS",
                   help=f"how long a fetch may wait for data (default {DEFAULT_MAX_WAIT_MS}); a broker "
                        "silent for this plus as much again (at least 1 s) is an error")
    p.add_argument("--time", type=int, default=-1, metavar="TIMESTAMP",
                   help="where to start: -1 latest (default), -2 earliest, or a timestamp in ms")
    p.add_argument("--report-interval-ms", type=int, default=DEFAULT_REPORT_INTERVAL_MS, metavar="MS",
                   help=f"how often to print the max lag (default {DEFAULT_REPORT_INTERVAL_MS})")
    p.add_argument("--max-rounds", type=int, default=None, metavar="N",
                   help="stop after N fetch rounds (default: until verified or no progress)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        opts = build_options(args.broker_list, args.topic_white_list, args.fetch_size, args.max_wait_ms,
                             args.time, args.report_interval_ms)
        if args.max_rounds is not None and args.max_rounds <= 0:
            raise VerifyError(f"--max-rounds {args.max_rounds} must be ≥ 1 (or left out)")
        summary = verify(opts, out=lambda line: print(line, flush=True), max_rounds=args.max_rounds)
    except VerifyError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 2
    print_summary(summary)
    return 0 if summary.ok else 1


def print_summary(s: Summary) -> None:
    if s.reported_round != s.rounds:         # the last round's line was not printed yet
        print(max_lag_line(s))
    mb = s.bytes_fetched / 1e6
    rate = mb / s.seconds if s.seconds > 0 else 0.0
    verdict = "replicas match" if s.ok else f"{len(s.mismatches)} MISMATCH(ES)"
    print(f"{stamp()}: verification finished: {verdict}; {s.partitions} partitions, {s.replicas} replicas, "
          f"{s.rounds} rounds, {s.batches} batches / {s.records} records compared, {mb:.1f} MB fetched "
          f"in {s.seconds:.1f} s ({rate:.1f} MB/s)")
    for partition, why in sorted(s.stopped.items()):
        print(f"  stopped: partition {partition} verified up to offset {s.verified.get(partition)}: {why}")
    for lag in s.lagging:
        if lag.partition in s.stopped:
            continue
        behind = ", ".join(f"replica {r} at {hw}" for r, hw in lag.behind) or "none"
        print(f"  lag: partition {lag.partition}: {lag.lag} messages behind high watermark {lag.high_watermark} "
              f"(verified up to offset {lag.verified_offset}; behind: {behind})")
    for m in s.mismatches:
        if m.kind == "corrupt":
            print(f"  CORRUPT: partition {m.partition} replica {m.other} at offset {m.offset}: {m.detail}")
            continue
        print(f"  MISMATCH: partition {m.partition} at offset {m.offset}: replica {m.replica} vs replica {m.other} "
              f"({m.kind}{': ' + m.detail if m.detail else ''})")
    for (partition, offset), odd in odd_replicas(s.mismatches).items():
        print(f"  partition {partition} offset {offset}: replica {odd} differs from all the others")


def odd_replicas(mismatches: list[Mismatch]) -> dict[tuple[str, int], int]:
    """Record mismatches where one replica is in every pair (with ≥ 2 pairs): that replica is
    the odd one out (the reference replica differs from all, or only one other does)."""
    pairs: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for m in mismatches:
        if m.kind == "record":
            pairs.setdefault((m.partition, m.offset), []).append((m.replica, m.other))
    out = {}
    for key, ps in pairs.items():
        common = set.intersection(*(set(p) for p in ps))
        if len(ps) >= 2 and len(common) == 1:
            out[key] = common.pop()
    return out
