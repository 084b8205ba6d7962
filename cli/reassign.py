"""``kafka-runbook reassign``: ``kafka-reassign-partitions.sh --zookeeper`` (generate/execute/verify).

* ``--generate --topics-to-move-json-file F --broker-list 0,2 [--disable-rack-aware]`` prints
  "Current partition replica assignment" and "Proposed partition reassignment configuration"
  as Kafka's tool does (docs/zookeeper.md §5.2), but the proposal is the *least-movement* one
  (:func:`planning.kernels.add_and_move.plan_move_topics`: replicas already on the broker list
  stay). Unregistered ids in ``--broker-list`` are dropped silently, as Kafka does.
* ``--execute --reassignment-json-file F [--throttle N] [--record R]``: Kafka's §5.1 checks,
  refusal when a reassignment is running, the rollback JSON printed, throttles merged in (the
  pre-run values saved to R, default ``F.throttles.json``), then the znode created.
* ``--verify --reassignment-json-file F [--record R] [--verify-format 2.4|2.6]``: Kafka 2.4.1's
  status lines (``--verify-format 2.6``: the 2.6+ lines); once nothing is in progress, the
  throttles recorded in R (saved by this command's ``--execute``) are restored exactly and R is
  removed. Unlike Kafka's own --verify, it never removes a throttle it did not record adding.

Failure: bad files, unknown partitions/brokers or a running reassignment print one ``Error:``
line and exit 1 with nothing written. ``--execute`` checks everything before its first write:
the record file's folder, the rate (a LONG), and every write (throttles and the reassignment
znode, its size included) rehearsed through a dry-run writer.
"""

from __future__ import annotations

import argparse
import dataclasses
import os

from cli.common import (add_zk_arguments, check_output_file, open_cluster, planner, print_planned,
                        read_text_file)
from kafka_zk.admin.reassignment import (current_assignment_json, moving_partitions, reassignment_status,
                                         submit_reassignment, targets_from_file_entries, validate_targets,
                                         verify_text, verify_text_2_4)
from kafka_zk.admin.throttles import ThrottleRecord, apply_throttles, remove_throttles
from kafka_zk.codecs import decode_reassignment_file, decode_topics_to_move, encode_reassignment_file
from kafka_zk.errors import InvalidInput, ReassignmentInProgress
from kafka_zk.snapshot import read_snapshot
from kafka_zk.throttle_lists import throttled_brokers, throttled_replicas
from kafka_zk.validation import parse_broker_ids, parse_throttle

EXISTING = ("Cannot execute because there is an existing partition assignment.  Use --additional to "
            "override this and create a new partition assignment in addition to the existing one. The "
            "--additional flag can also be used to change the throttle by resubmitting the current "
            "reassignment.")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("reassign", help="kafka-reassign-partitions: generate, execute, verify",
                              description=__doc__.splitlines()[0])
    add_zk_arguments(p)
    act = p.add_mutually_exclusive_group(required=True)
    act.add_argument("--generate", action="store_true")
    act.add_argument("--execute", action="store_true")
    act.add_argument("--verify", action="store_true")
    p.add_argument("--topics-to-move-json-file", metavar="FILE")
    p.add_argument("--broker-list", metavar="IDS")
    p.add_argument("--disable-rack-aware", action="store_true")
    p.add_argument("--reassignment-json-file", metavar="FILE")
    p.add_argument("--throttle", default=None, metavar="BYTES_PER_S",
                   help="replication throttle, bytes/s from 1 (-1, Kafka's default: no throttle)")
    p.add_argument("--record", metavar="FILE", help="throttle record (default: <json file>.throttles.json)")
    p.add_argument("--verify-format", choices=("2.4", "2.6"), default="2.4",
                   help="--verify lines of Kafka 2.4.1 (default) or of 2.6+")
    p.add_argument("--seed", type=int, default=0, help="tie-breaking seed of --generate")
    p.set_defaults(func=run)


def _read(path: str | None, flag: str) -> str:
    return read_text_file(path, flag)


def _broker_list(text: str | None) -> list[int]:
    if not text or not text.strip(", "):
        raise InvalidInput("--broker-list is required with --generate, e.g. --broker-list 0,2")
    return parse_broker_ids(text, "--broker-list")


def generate(args: argparse.Namespace) -> int:
    # local: a subcommand loads only what it runs (CLI start-up)
    from planning.kernels.add_and_move import plan_move_topics

    topics = decode_topics_to_move(_read(args.topics_to_move_json_file, "--topics-to-move-json-file"))
    ids = _broker_list(args.broker_list)
    with open_cluster(args, "reassign-generate") as writer:
        snapshot = read_snapshot(writer.client, topics=topics)
    if args.disable_rack_aware:
        snapshot = dataclasses.replace(snapshot, brokers={
            b: dataclasses.replace(br, rack=None) for b, br in snapshot.brokers.items()})
    elif len({br.rack is None for br in snapshot.brokers.values()}) > 1:
        raise InvalidInput("Not all brokers have rack information. Add --disable-rack-aware in command "
                           "line to make replica assignment without rack information.")
    registered = [b for b in ids if b in snapshot.brokers]
    plan = plan_move_topics(snapshot, topics, registered, seed=args.seed)
    current = {p.tp: p.replicas for t in topics for p in snapshot.topics[t].partitions.values()}
    proposed = dict(current)
    proposed.update(plan.target)
    print("Current partition replica assignment")
    print(encode_reassignment_file(current, with_log_dirs=True).decode())
    print()
    print("Proposed partition reassignment configuration")
    print(encode_reassignment_file(proposed, with_log_dirs=True).decode())
    return 0


def _record_path(args: argparse.Namespace) -> str:
    return args.record or f"{args.reassignment_json_file}.throttles.json"


def execute(args: argparse.Namespace) -> int:
    targets = targets_from_file_entries(decode_reassignment_file(
        _read(args.reassignment_json_file, "--reassignment-json-file")))
    args.throttle = None if args.throttle in (None, "-1") else parse_throttle(args.throttle, "--throttle")
    if args.throttle is not None:
        if not args.dry_run:
            check_output_file(_record_path(args), "--record")
    with open_cluster(args, "reassign-execute") as writer:
        snapshot = read_snapshot(writer.client, topics=sorted({tp.topic for tp in targets}))
        if snapshot.reassignment is not None and snapshot.reassignment.entries:
            raise ReassignmentInProgress(EXISTING)
        validate_targets(snapshot, targets)
        print("Current partition replica assignment")
        print()
        print(current_assignment_json(snapshot, sorted(targets)))
        print()
        print("Save this to use as the --reassignment-json-file option during rollback")
        if args.throttle is not None:
            current = {tp: snapshot.partition(tp).replicas for tp in targets}
            path = _record_path(args)
            previous = ThrottleRecord.from_json(_read(path, "--record")) if os.path.exists(path) else None
            rehearsal = planner(writer)          # every write checked (sizes too) before the first one
            record = apply_throttles(rehearsal, throttled_replicas(current, targets).values(),
                                     throttled_brokers(current, targets), args.throttle, record=previous)
            submit_reassignment(rehearsal, snapshot, targets)
            if not writer.dry_run:
                record.save(path)            # the record first: throttles are never left unrecorded
            apply_throttles(writer, throttled_replicas(current, targets).values(),
                            throttled_brokers(current, targets), args.throttle, record=previous)
            print("Warning: You must run --verify periodically, until the reassignment completes, to "
                  "ensure the throttle is removed.")
            print(f"The inter-broker throttle limit was set to {args.throttle} B/s")
        submit_reassignment(writer, snapshot, targets)
        print_planned(writer)
    moving = moving_partitions(snapshot, targets) or sorted(targets)
    print("Successfully started partition reassignment(s) for " + ",".join(str(tp) for tp in moving))
    return 0


def verify(args: argparse.Namespace) -> int:
    targets = targets_from_file_entries(decode_reassignment_file(
        _read(args.reassignment_json_file, "--reassignment-json-file")))
    with open_cluster(args, "reassign-verify") as writer:
        snapshot = read_snapshot(writer.client, topics=sorted({tp.topic for tp in targets}))
        status = reassignment_status(snapshot, targets)
        old = args.verify_format == "2.4"
        for line in (verify_text_2_4(status) if old else verify_text(status)):
            print(line)
        path = _record_path(args)
        running = snapshot.reassignment is not None and bool(snapshot.reassignment.entries)
        if not running and status.done and os.path.exists(path):
            record = ThrottleRecord.from_json(_read(path, "--record"))
            remove_throttles(writer, record)
            print_planned(writer)
            if not writer.dry_run:
                os.remove(path)
            if old:
                if record.brokers or record.topics:
                    print("Throttle was removed.")
            elif record.brokers:
                print("Clearing broker-level throttles on broker(s) "
                      + ",".join(b.broker for b in record.brokers))
            if record.topics and not old:
                print("Clearing topic-level throttles on topic(s) " + ",".join(t.topic for t in record.topics))
    return 0


def run(args: argparse.Namespace) -> int:
    if args.generate:
        return generate(args)
    if args.execute:
        return execute(args)
    return verify(args)

