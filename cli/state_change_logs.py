"""``kafka-runbook state-change-logs``: Kafka's ``kafka.tools.StateChangeLogMerger``.

Merges the brokers' ``state-change.log`` files (rotated and gzip ones too) by time, filtered by
topic regex, partitions and time range, each line prefixed with the file it came from
(``--no-prefix`` prints the bare lines, as Kafka 2.4's tool does). Inputs up to
``--spark-threshold`` bytes are merged in this process (a k-way streaming merge, a block and
up to ``--reorder-window`` entries per file in memory); larger inputs, or any with ``--spark``, go to the Spark job
(:mod:`spark_jobs.state_change_job`), whose output is the same, byte for byte.

Failure: bad options or inputs (no file found, unreadable file, malformed time, bad regex,
repeated partitions...) print one ``Error: ...`` line naming the problem and exit 1 before
anything is written; with ``--output`` a failure midway leaves no file. Lines before a file's
first timestamp are skipped with a counted warning on stderr.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
from typing import Any

from kafka_zk.errors import InvalidInput

#: Above this many input bytes the CLI uses Spark. Measured (BENCHMARKS.md, "State-change log
#: merge"): on 2 cores Spark local[2] (14 s start, 10.6 MiB/s) catches up with the in-process
#: merge (10.1 MiB/s) at about 3.1 GiB when the machine is quiet, never under heavy load; 4 GiB
#: rounds that up. Override with --spark-threshold or --spark (and --master for a cluster).
DEFAULT_SPARK_THRESHOLD = 4 * 1024 ** 3


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "state-change-logs",
        help="merge brokers' state-change.log files by time (kafka.tools.StateChangeLogMerger)",
        description="Merge the state change logs of several brokers (rotated and gzip files too) to "
                    "reconstruct a unified history of what happened. Example: kafka-runbook "
                    "state-change-logs --logs-regex '/var/log/kafka/state-change.log.*' --topic orders "
                    "--partitions 0,3 --start-time '2024-05-01 13:00:00,000'")
    p.add_argument("--logs", metavar="FILE1,FILE2,...",
                   help="comma-separated state change logs (an item with * ? [ is a glob)")
    p.add_argument("--logs-regex", metavar="DIR/REGEX",
                   help="a directory and a regex of the names of its files to merge, e.g. "
                        "/var/log/kafka/state-change.log.*")
    p.add_argument("--topic", help="regex of the topics whose entries to keep (whole name)")
    p.add_argument("--partitions", metavar="0,1,2,...", help="partition ids to keep (needs --topic)")
    p.add_argument("--start-time", metavar="'yyyy-MM-dd HH:mm:ss,SSS'", help="earliest entry time kept")
    p.add_argument("--end-time", metavar="'yyyy-MM-dd HH:mm:ss,SSS'", help="latest entry time kept")
    p.add_argument("--output", "-o", metavar="FILE", help="write here instead of stdout (atomically)")
    p.add_argument("--no-prefix", action="store_true", help="print lines without the file prefix")
    p.add_argument("--spark", action="store_true", help="merge with the Spark job whatever the size")
    p.add_argument("--spark-threshold", type=int, default=DEFAULT_SPARK_THRESHOLD, metavar="BYTES",
                   help=f"use Spark above this many input bytes (default {DEFAULT_SPARK_THRESHOLD})")
    p.add_argument("--master", default=None, help="Spark master for the Spark job (default local[*])")
    p.add_argument("--reorder-window", type=int, default=None, metavar="ENTRIES",
                   help="in-process merge: how far (in entries) a file's times may go back (default 10000)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # local: a subcommand loads only what it runs (CLI start-up)
    from formats.state_change_log import compile_filter
    from formats.state_change_files import DEFAULT_REORDER_WINDOW, find_logs, write_merged

    if args.spark_threshold < 0:
        raise InvalidInput(f"--spark-threshold {args.spark_threshold} is negative; give a size in bytes")
    window = DEFAULT_REORDER_WINDOW if args.reorder_window is None else args.reorder_window
    if window < 1:
        raise InvalidInput(f"--reorder-window {window} must be ≥ 1")
    flt = compile_filter(args.topic, args.partitions, args.start_time, args.end_time)
    logs = find_logs(args.logs, args.logs_regex)
    if args.output is not None:
        out_dir = os.path.dirname(os.path.abspath(args.output))
        if os.path.isdir(args.output):
            raise InvalidInput(f"--output {args.output!r} is a directory; give a file name")
        if not os.path.isdir(out_dir):
            raise InvalidInput(f"--output {args.output!r}: directory {out_dir!r} does not exist")
    total = sum(log.size for log in logs)
    use_spark = args.spark or total > args.spark_threshold
    prefix = not args.no_prefix

    if use_spark:
        # local: a subcommand loads only what it runs (CLI start-up)
        from spark_jobs.state_change_job import merge_with_spark

        target = args.output
        tmp = None
        if target is None:
            fd, tmp = tempfile.mkstemp(prefix="state-change-merged-", suffix=".log")
            os.close(fd)
            target = tmp
        try:
            stats = merge_with_spark(logs, flt, target, prefix=prefix, master=args.master)
            if tmp is not None:
                with open(tmp, "rb") as fh:
                    while chunk := fh.read(1 << 20):
                        sys.stdout.buffer.write(chunk)
                sys.stdout.buffer.flush()
        finally:
            if tmp is not None and os.path.exists(tmp):
                os.unlink(tmp)
    elif args.output is None:
        out = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="\n", write_through=False)
        try:                             # a reader leaving (`| head`) is handled by cli.main
            stats = write_merged(logs, flt, out, prefix=prefix, reorder_window=window)
            out.flush()
        finally:
            try:
                out.detach()
            except ValueError:
                pass
    else:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(args.output)),
                                   prefix=".state-change-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
                stats = write_merged(logs, flt, out, prefix=prefix, reorder_window=window)
            os.replace(tmp, args.output)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    for line in stats.warnings():
        print(line, file=sys.stderr)
    print(f"merged {stats.written} of {stats.entries} entries from {len(logs)} file(s)"
          f"{' with Spark' if use_spark else ''}", file=sys.stderr)
    return 0
