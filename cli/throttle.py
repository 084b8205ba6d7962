"""``kafka-runbook throttle``: set, show and remove replication throttles for a reassignment.

``--set --reassignment-json-file F --throttle BYTES_PER_S --record R`` computes Kafka's throttle
lists for the moving partitions of F against the live assignment (leader = current replicas,
follower = destinations), merges them into the topics' lists, sets the rates on the source and
destination brokers, and writes (or extends) the record file R with what was there before.
``--remove --record R`` restores exactly those values (idempotent). ``--show`` prints the
throttles present on the cluster. ``--dry-run`` prints the writes and leaves R untouched.

Failure: a bad file, unknown partitions or a rate that is not 1..2^63-1
(:func:`kafka_zk.validation.parse_throttle`): one ``Error:`` line, exit 1, nothing written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from cli.common import (add_zk_arguments, check_output_file, open_cluster, planner, print_planned,
                        read_text_file)
from kafka_zk.admin.reassignment import targets_from_file_entries, validate_targets
from kafka_zk.admin.throttles import ThrottleRecord, apply_throttles, remove_throttles
from kafka_zk.codecs import decode_reassignment_file
from kafka_zk.errors import InvalidInput
from kafka_zk.snapshot import read_snapshot
from kafka_zk.throttle_lists import FOLLOWER_KEY, LEADER_KEY, throttled_brokers, throttled_replicas
from kafka_zk.topic_configs import BROKER_THROTTLE_KEYS
from kafka_zk.validation import parse_throttle


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = subparsers.add_parser("throttle", help="set/show/remove replication throttles",
                              description=__doc__.splitlines()[0])
    add_zk_arguments(p)
    act = p.add_mutually_exclusive_group(required=True)
    act.add_argument("--set", action="store_true")
    act.add_argument("--remove", action="store_true")
    act.add_argument("--show", action="store_true")
    p.add_argument("--reassignment-json-file", metavar="FILE")
    p.add_argument("--throttle", metavar="BYTES_PER_S", help="bytes/s, a whole number from 1")
    p.add_argument("--replica-alter-log-dirs-throttle", metavar="BYTES_PER_S", help="bytes/s, a whole number from 1")
    p.add_argument("--record", metavar="FILE", help="the throttle record of this run (JSON)")
    p.set_defaults(func=run)


def _read_text(path: str, flag: str) -> str:
    return read_text_file(path, flag)


def run(args: argparse.Namespace) -> int:
    if args.set:
        if not args.reassignment_json_file or args.throttle is None or not args.record:
            raise InvalidInput("--set needs --reassignment-json-file, --throttle and --record")
        args.throttle = parse_throttle(args.throttle, "--throttle")
        if args.replica_alter_log_dirs_throttle is not None:
            args.replica_alter_log_dirs_throttle = parse_throttle(args.replica_alter_log_dirs_throttle,
                                                                  "--replica-alter-log-dirs-throttle")
        targets = targets_from_file_entries(decode_reassignment_file(
            _read_text(args.reassignment_json_file, "--reassignment-json-file")))
        if not args.dry_run:
            check_output_file(args.record, "--record")
        previous = ThrottleRecord.from_json(_read_text(args.record, "--record")) if Path(args.record).exists() \
            else None
    elif args.remove:
        if not args.record:
            raise InvalidInput("--remove needs --record (the file written by --set)")
        previous = ThrottleRecord.from_json(_read_text(args.record, "--record"))
    with open_cluster(args, "throttle") as w:
        if args.show:
            snap = read_snapshot(w.client)
            for entity, cfg in sorted(snap.broker_configs.items()):
                rates = {k: v for k, v in cfg.items() if k in BROKER_THROTTLE_KEYS}
                if rates:
                    print(f"broker {entity}: " + ",".join(f"{k}={v}" for k, v in sorted(rates.items())))
            for name, topic in sorted(snap.topics.items()):
                lists = {k: v for k, v in topic.config.items() if k in (LEADER_KEY, FOLLOWER_KEY)}
                if lists:
                    print(f"topic {name}: " + " ".join(f"{k}={v}" for k, v in sorted(lists.items())))
            return 0
        if args.set:
            snap = read_snapshot(w.client, topics={tp.topic for tp in targets}, with_configs=False)
            validate_targets(snap, targets)
            current = snap.assignment()
            record = apply_throttles(planner(w), throttled_replicas(current, targets).values(),
                                     throttled_brokers(current, targets), args.throttle,
                                     args.replica_alter_log_dirs_throttle, previous)
            if not w.dry_run:
                record.save(args.record)     # the record first: throttles are never left unrecorded
            apply_throttles(w, throttled_replicas(current, targets).values(),
                            throttled_brokers(current, targets), args.throttle,
                            args.replica_alter_log_dirs_throttle, previous)
            print_planned(w)
            if not w.dry_run:
                print(f"The inter-broker throttle limit was set to {args.throttle} B/s")
                print(f"Throttle record written to {args.record}")
            return 0
        written = remove_throttles(w, previous)
        print_planned(w)
        if not w.dry_run:
            print("Throttle was removed." if written else "No throttle of this run was left to remove.")
    return 0
