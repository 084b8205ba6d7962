"""``kafka-runbook plan <operation>``: snapshot the cluster, run the Spark plan job, print the summary.

Operations: decommission, add-brokers, rebalance, change-rf, move-topics, reassign-json (alias
reassign), rollback, election (alias elect), delete-topics (alias delete), each with the options of
its DAG's Params. Each takes ``--zookeeper`` (the assignments and the states the plan needs are
read, overlapped with the sizes and the plan, by :mod:`cli.plan_zookeeper`, and saved as
``<out>/snapshot.jsonl``) or
``--snapshot FILE`` (plan offline from a saved snapshot), runs
:mod:`spark_jobs.plan_job` in this process, and prints the summary. With ``--zookeeper`` and no
Spark named, the job builds its input from what was read, in memory (no file read back); with
``--snapshot`` it reads the file in the driver (no JVM) for files up to a measured size, else with Spark (``--master`` picks a
master, default ``local[*]``; ``--remote sc://host:port`` plans on a Spark Connect server;
``--engine`` forces either). Nothing is written to ZooKeeper.

Failure: bad flags exit 2 (argparse); a refused plan or an unreachable ZooKeeper prints one
``Error: ...`` line and exits 1, with no artifacts written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from kafka_zk.errors import InvalidInput
from kafka_zk.limits import ADMIN_BATCH_BYTES
from planning.wave_time import POLL_S
from kafka_zk.retiring import ENV as RETIRING_ENV
from kafka_zk.retiring import default_path as default_retiring_path
from procedures.run_folder import default_run_root

SNAPSHOT_FILE = "snapshot.jsonl"   # where --zookeeper saves the snapshot in --out


def _common(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--zookeeper", help="host:port[/chroot] of the cluster (Kafka's zookeeper.connect)")
    src.add_argument("--snapshot", help="plan from a saved snapshot file instead")
    p.add_argument("--sizes", help="partition sizes: the output of `kafka-log-dirs.sh --describe`, or a "
                   "sizes.jsonl written by the snapshot step")
    p.add_argument("--capacity", help="broker disk capacity (Cruise Control's capacity JSON, or "
                   '{"brokers": {"<id>": <bytes>}}): no broker may pass --disk-threshold-pct of it at any step')
    p.add_argument("--disk-threshold-pct", type=float, default=None, metavar="PCT",
                   help="most a broker's disk may be filled at any step (default 85)")
    p.add_argument("--allow-extra-moves", action="store_true",
                   help="with --capacity: move other replicas off a broker least movement would overfill")
    p.add_argument("--throttle", default=None, metavar="BYTES_PER_S",
                   help="replication throttle, bytes/s: a whole number from 1 (read as the runbooks read it)")
    p.add_argument("--max-moves-per-broker", type=int, default=None, metavar="N",
                   help="at most N moves per broker in one wave (default: no cap; the waves are sized by bytes "
                        "and the predicted time)")
    p.add_argument("--max-wave-bytes", default=None, metavar="SIZE", help="bytes or a size like 10GiB")
    p.add_argument("--max-znode-bytes", type=int, default=ADMIN_BATCH_BYTES)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--master", default=None, help="Spark master (default local[*])")
    p.add_argument("--remote", default=None, metavar="sc://HOST:PORT",
                   help="plan on a standing Spark Connect server instead of starting Spark")
    p.add_argument("--engine", choices=("auto", "driver", "spark"), default="auto",
                   help="who reads the snapshot: the driver (no JVM), Spark, or auto (the driver up to "
                        "--driver-max-snapshot-bytes when no Spark master or server is named)")
    p.add_argument("--driver-max-snapshot-bytes", type=int, default=None, metavar="BYTES",
                   help="--engine auto: largest snapshot read in the driver (default: measured, see BENCHMARKS.md)")
    p.add_argument("--out", required=True, help="folder for the plan artifacts")
    p.add_argument("--retiring-file", metavar="FILE", default=None,
                   help="with --zookeeper: the runbooks' retiring-brokers file, whose brokers of this cluster are "
                        f"left out as destinations (default ${RETIRING_ENV}, else "
                        "$KAFKA_RUNBOOKS_RUN_ROOT/retiring_brokers.json, else /var/tmp/kafka-runbooks/runs/"
                        "retiring_brokers.json: the runbooks' own)")
    p.add_argument("--ignore-retiring", action="store_true",
                   help="with --zookeeper: plan as if no broker were retiring (the retiring-brokers file is not read)")
    p.add_argument("--json", action="store_true", help="print the whole summary as JSON")


def add_parser(subparsers: Any) -> None:
    plan = subparsers.add_parser("plan", help="make a plan with the Spark job (nothing is written to ZooKeeper)")
    ops = plan.add_subparsers(dest="operation", required=True, metavar="OPERATION")
    p = ops.add_parser("decommission", help="move every replica off the given brokers")
    p.add_argument("--brokers", required=True, help="ids of the brokers to empty, e.g. 3,4")
    _common(p)
    p = ops.add_parser("replace", help="replace brokers by new ones: each new broker takes exactly the old one's "
                                       "replicas, in its position of each list (replace 4 with 7: --brokers 4 "
                                       "--with 7); the old broker may be alive or dead")
    p.add_argument("--brokers", required=True, help="ids of the brokers replaced, e.g. 4 or 4,5")
    p.add_argument("--with", dest="replace_with", required=True,
                   help="ids of the new brokers, paired in order with --brokers, e.g. 7 or 7,8")
    _common(p)
    p = ops.add_parser("add-brokers", help="move a balanced share onto new brokers")
    p.add_argument("--brokers", required=True, help="ids of the new brokers")
    _common(p)
    p = ops.add_parser("change-rf", help="raise or lower the replication factor of topics")
    p.add_argument("--topics", required=True)
    p.add_argument("--replication-factor", type=int, required=True)
    _common(p)
    p = ops.add_parser("move-topics", help="move topics onto a broker set with least movement")
    p.add_argument("--topics", required=True)
    p.add_argument("--brokers", required=True, help="the broker set the topics must live on")
    _common(p)
    p = ops.add_parser("rebalance", help="even out replicas, preferred leaders and bytes within a move budget")
    p.add_argument("--max-replicas-moved", type=int, default=None,
                   help="move budget: new replicas at most (default: no cap)")
    p.add_argument("--max-bytes-moved", default=None, metavar="SIZE", help="move budget: bytes copied at most, "
                   "bytes or a size like 50GiB (default: no cap)")
    p.add_argument("--target-replica-spread", type=int, default=1,
                   help="stop once replica counts differ by at most this much (default 1)")
    p.add_argument("--target-bytes-spread", type=float, default=0.10,
                   help="stop once (max - min) / mean of bytes per broker is at most this (default 0.10)")
    p.add_argument("--target-leader-spread", type=int, default=1,
                   help="preferred-leader counts differ by at most this much (default 1)")
    _common(p)
    p = ops.add_parser("reassign-json", aliases=["reassign"], help="validate and schedule a user reassignment JSON")
    p.add_argument("--reassignment-json-file", required=True)
    p.set_defaults(operation="reassign-json")
    _common(p)
    p = ops.add_parser("rollback", help="restore what an earlier run recorded (its plan/rollback.json), where "
                                        "that run's change is still in place")
    grp = p.add_mutually_exclusive_group(required=True)
    grp.add_argument("--rollback-from", default=None, help="the plan/ folder of the run to undo")
    grp.add_argument("--reassignment-json-file", default=None, help="an assignment to restore, Kafka's format")
    _common(p)
    p = ops.add_parser("election", aliases=["elect"], help="preferred leader election batches")
    p.set_defaults(operation="election")
    p.add_argument("--topics", default="", help="limit to these topics (default: all)")
    p.add_argument("--batch-size", type=int, default=None)
    _common(p)
    p = ops.add_parser("delete-topics", aliases=["delete"], help="topic deletion batches (dry-run preview)")
    p.set_defaults(operation="delete-topics")
    grp = p.add_mutually_exclusive_group(required=True)
    grp.add_argument("--topics", default="")
    grp.add_argument("--topic-regex", default=None)
    p.add_argument("--batch-size", type=int, default=None)
    _common(p)
    plan.set_defaults(func=run)


def job_argv(args: argparse.Namespace, snapshot_path: str) -> list[str]:
    """The plan job's command line for these CLI arguments."""
    argv = ["--snapshot", snapshot_path, "--op", args.operation, "--out", args.out,
            "--seed", str(args.seed), "--max-znode-bytes", str(args.max_znode_bytes)]
    if args.max_moves_per_broker is not None:
        argv += ["--max-moves-per-broker", str(args.max_moves_per_broker)]
    for flag, attr in (("--brokers", "brokers"), ("--replace-with", "replace_with"), ("--topics", "topics"), ("--topic-regex", "topic_regex"),
                       ("--replication-factor", "replication_factor"), ("--sizes", "sizes"),
                       ("--reassignment-json-file", "reassignment_json_file"), ("--throttle", "throttle"),
                       ("--rollback-from", "rollback_from"),
                       ("--max-wave-bytes", "max_wave_bytes"), ("--batch-size", "batch_size"),
                       ("--capacity", "capacity"), ("--disk-threshold-pct", "disk_threshold_pct"),
                       ("--master", "master"), ("--remote", "remote"), ("--engine", "engine"),
                       ("--driver-max-snapshot-bytes", "driver_max_snapshot_bytes"),
                       ("--max-replicas-moved", "max_replicas_moved"), ("--max-bytes-moved", "max_bytes_moved"),
                       ("--target-replica-spread", "target_replica_spread"),
                       ("--target-bytes-spread", "target_bytes_spread"),
                       ("--target-leader-spread", "target_leader_spread")):
        value = getattr(args, attr, None)
        if value not in (None, ""):
            argv.append(f"{flag}={value}")      # one word: a value may start with '-' (a regex, a topic)
    if getattr(args, "allow_extra_moves", False):
        argv.append("--allow-extra-moves")
    return argv


def print_summary(summary: dict[str, Any]) -> None:
    print(f"Plan {summary['operation']}: {summary['moves']} partition(s) move, "
          f"{summary['replica_moves']} new replica(s), {summary['bytes_moved']} bytes")
    if summary.get("replica_moves_lower_bound") is not None:
        print(f"Least movement: lower bound {summary['replica_moves_lower_bound']} replica(s)")
    after = summary["balance_after"]
    empty = summary.get("empty_after") or []
    over = f" (over the brokers holding data; registered but empty after the plan: {', '.join(map(str, empty))})" \
        if empty else ""
    print(f"Balance after{over}: replica spread {after['replica_spread']} "
          f"(within racks {after['replica_spread_within_rack'] or '-'}), "
          f"preferred-leader spread {after['leader_spread']}, "
          f"bytes spread {after['bytes_relative_spread']:.1%}")
    if summary["predicted_seconds"] is not None:
        print(f"Waves: {summary['waves']}, predicted {summary['predicted_seconds']:.0f} s at the throttle "
              f"(lower bound {summary['lower_bound_seconds']:.0f} s, fixed batches of 10 "
              f"{summary['fixed_batches_of_10_seconds']:.0f} s)")
        if summary.get("estimate"):
            est = summary["estimate"]
            print(f"Estimated run, first write to last wave done: {est['total_s']:.0f} s = "
                  f"{est['copy_s']:.0f} s copying "
                  f"+ {est['fixed_s']:.1f} s fixed ({est['waves']} waves) + {est['gaps_s']:.1f} s between waves "
                  f"({est['source']}, a {POLL_S:g} s poll)")
    else:
        print(f"Waves: {summary['waves']} (pass --throttle for a predicted duration)")
    if (summary.get("waves_shaped_by") or {}).get("text"):
        print(f"Waves shaped: {summary['waves_shaped_by']['text']}")
    for batch_kind in ("election_batches", "deletion_batches"):
        if summary.get(batch_kind):
            print(f"{batch_kind.replace('_', ' ').capitalize()}: {summary[batch_kind]}")
    disk = summary.get("disk") or {}
    if disk:
        worst = (f"; fullest broker {disk['worst_broker']} peaks at {disk['worst_peak_pct']} % of its capacity"
                 if disk.get("worst_broker") is not None else "")
        print(f"Disk: {disk['status']}{worst}")
        for note in disk.get("growth_notes", ()):
            print(f"Note: {note}")
    for note in summary.get("notes", ()):
        print(f"Note: {note}")
    for line in summary.get("excluded_brokers", ()):
        print(f"Excluded as a destination: {line}")
    engine = summary.get("engine")
    if engine:
        phases = ", ".join(f"{k} {v:.1f} s" for k, v in summary.get("timings_s", {}).items())
        print(f"Read by: {engine['engine']} ({engine['reason']}); {phases}")
    print(f"Artifacts in {summary['out']}, plan hash {summary['plan_hash']}")


def _input_file(path: str | None, flag: str) -> None:
    if path is not None and not os.path.isfile(path):
        what = "is a folder" if os.path.isdir(path) else "does not exist"
        raise InvalidInput(f"{flag} {path} {what}; give the path of a file")
    if path is not None and not os.access(path, os.R_OK):
        raise InvalidInput(f"{flag} {path} is not readable by this user")


def check_args(args: argparse.Namespace) -> None:
    """Every flag checked before a snapshot is read or Spark starts (one clear error each)."""
    # local: a subcommand loads only what it runs (CLI start-up)
    from kafka_zk.validation import (check_count, parse_broker_ids, parse_size, parse_throttle, parse_topic_names,
                                     parse_replacements, parse_topic_regex)

    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise InvalidInput(f"--out {args.out} is a file; give a folder for the plan artifacts (new or empty)")
    parent = os.path.dirname(os.path.abspath(args.out))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise InvalidInput(f"--out {args.out}: {parent} is a file, not a folder; pick a folder for the artifacts")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InvalidInput(f"--out {args.out}: {parent} is not a writable folder; pick a writable place")
    _input_file(args.snapshot, "--snapshot")
    if (args.retiring_file or args.ignore_retiring) and not args.zookeeper:
        flag = "--retiring-file" if args.retiring_file else "--ignore-retiring"
        raise InvalidInput(f"{flag} applies with --zookeeper (a snapshot saved by plan --zookeeper is "
                           "already without the retiring brokers); leave it out or plan with --zookeeper")
    if args.retiring_file and args.ignore_retiring:
        raise InvalidInput("--retiring-file and --ignore-retiring contradict each other: give one")
    _input_file(args.sizes, "--sizes")
    _input_file(getattr(args, "reassignment_json_file", None), "--reassignment-json-file")
    if getattr(args, "brokers", None) is not None:
        parse_broker_ids(args.brokers, "--brokers")
    if getattr(args, "replace_with", None) is not None:
        parse_replacements(args.brokers, args.replace_with, "--brokers", "--with")
    parse_topic_names(getattr(args, "topics", None), "--topics")
    parse_topic_regex(getattr(args, "topic_regex", None), "--topic-regex")
    if getattr(args, "replication_factor", None) is not None:
        check_count(args.replication_factor, "--replication-factor", maximum=32767)
    if args.throttle is not None:
        args.throttle = parse_throttle(args.throttle, "--throttle")
    if args.max_moves_per_broker is not None:
        check_count(args.max_moves_per_broker, "--max-moves-per-broker")
    if args.max_wave_bytes is not None:
        args.max_wave_bytes = parse_size(args.max_wave_bytes, "--max-wave-bytes", minimum=1)
    if getattr(args, "max_bytes_moved", None) is not None:
        args.max_bytes_moved = parse_size(args.max_bytes_moved, "--max-bytes-moved")
    check_count(args.max_znode_bytes, "--max-znode-bytes", minimum=1024, maximum=1_048_576 - 4096)
    if getattr(args, "batch_size", None) is not None:
        check_count(args.batch_size, "--batch-size")
    for flag, attr in (("--max-replicas-moved", "max_replicas_moved"), ("--max-bytes-moved", "max_bytes_moved"),
                       ("--target-replica-spread", "target_replica_spread"),
                       ("--target-leader-spread", "target_leader_spread")):
        value = getattr(args, attr, None)
        if value is not None and value < 0:
            raise InvalidInput(f"{flag} {value}: must be 0 or more (a budget of 0 moves nothing; leave it out "
                               "for no cap)")
    spread = getattr(args, "target_bytes_spread", None)
    if spread is not None and not 0 <= spread < 100:
        raise InvalidInput(f"--target-bytes-spread {spread}: a fraction of the mean bytes, e.g. 0.10 for 10 %")


def run(args: argparse.Namespace) -> int:
    check_args(args)
    # local: a subcommand loads only what it runs (CLI start-up)
    from spark_jobs import plan_job

    # a plan folder may be planned again; so may one holding only the snapshot of a refused attempt
    if os.path.exists(args.out) and set(os.listdir(args.out)) - {SNAPSHOT_FILE} and not os.path.exists(
            os.path.join(args.out, "plan.sha256")):
        raise InvalidInput(f"--out {args.out} is a non-empty folder that is not a plan folder; "
                           "pick an empty or new folder")
    os.makedirs(args.out, exist_ok=True)
    snapshot_path = os.path.join(args.out, SNAPSHOT_FILE) if args.zookeeper else args.snapshot
    job_args = plan_job.parse_args(job_argv(args, os.path.abspath(snapshot_path)))
    # an embedding process (a test, a notebook) keeps its session; else the job reads in the driver
    # or starts a session (while raw kafka-log-dirs output is parsed) and stops it. pyspark is not
    # imported for the question (1.2-1.5 s): a process with a session has imported it already.
    spark_sql = sys.modules.get("pyspark.sql")
    session = spark_sql.SparkSession.getActiveSession() if spark_sql else None
    if args.zookeeper:
        # local: a subcommand loads only what it runs (CLI start-up)
        from cli.plan_zookeeper import plan_from_zookeeper

        # every data-moving plan leaves the runbooks' retiring brokers out by default (issue 39);
        # election and deletion batches choose no destination
        moving = args.operation not in ("election", "elect", "delete-topics", "delete")
        retiring = None if args.ignore_retiring or not moving else str(args.retiring_file or default_retiring_path(default_run_root()))
        summary = plan_from_zookeeper(args.zookeeper, job_args, session, retiring_file=retiring)
    else:
        summary = plan_job.execute(job_args, session)
    summary["out"] = args.out
    if args.json:
        print(json.dumps(summary, indent=2, sort_keys=True))
    else:
        print_summary(summary)
    return 0
