"""``kafka-runbook topics``: what ``kafka-topics.sh --zookeeper`` (2.4) does, through kafka_zk.

Actions: ``--list``, ``--describe`` (with Kafka's filters, but ``--under-min-isr-partitions`` and
``--at-min-isr-partitions`` refused with --zookeeper as 2.4 does; ``--describe-format 1.x`` for the
pre-2.4 header), ``--create``, ``--alter`` (``--partitions`` and/or ``--config``/``--delete-config``),
``--delete``. ``--topic`` takes a regular expression for list/describe/alter/delete, as Kafka's
does. ``--list`` reads only ``/brokers/topics`` and the deletion markers, as Kafka's does (so it
works without credentials on a cluster whose other znodes are not world-readable). Every writing action accepts ``--dry-run`` (print the planned writes, write nothing) and
``--audit-log FILE``. 
Failure: bad input prints one ``Error: ...`` line and exits 1 (see cli.main), nothing written.
"""

from __future__ import annotations

import argparse
import sys

from cli.common import add_zk_arguments, open_cluster, parse_config_options, planner, print_planned
from kafka_zk.admin import topics as admin
from kafka_zk.admin.configs import alter_config
from kafka_zk.assignment import parse_replica_assignment
from kafka_zk.describe import DescribeFilters, describe_lines
from kafka_zk.errors import InvalidInput, TopicNotFound
from kafka_zk.snapshot import read_snapshot
from kafka_zk.topic_configs import validate_topic_config
from kafka_zk.writer import ZkWriter


# ---------------------------------------------------------------------------- the command

def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = subparsers.add_parser("topics", help="create, list, describe, alter and delete topics (kafka-topics)",
                              description=__doc__.splitlines()[0])
    add_zk_arguments(p)
    act = p.add_mutually_exclusive_group(required=True)
    for name in ("list", "describe", "create", "alter", "delete"):
        act.add_argument(f"--{name}", action="store_true")
    p.add_argument("--topic", help="topic name (a regular expression except for --create)")
    p.add_argument("--partitions", type=int)
    p.add_argument("--replication-factor", type=int)
    p.add_argument("--replica-assignment", metavar="0:1,1:2", help="broker lists per partition")
    p.add_argument("--config", action="append", metavar="K=V", help="topic config override (repeatable)")
    p.add_argument("--delete-config", action="append", metavar="K", help="--alter: remove an override")
    p.add_argument("--if-not-exists", action="store_true")
    p.add_argument("--if-exists", action="store_true")
    p.add_argument("--disable-rack-aware", action="store_true")
    p.add_argument("--force", action="store_true", help="allow deleting an internal topic")
    p.add_argument("--exclude-internal", action="store_true")
    p.add_argument("--under-replicated-partitions", action="store_true")
    p.add_argument("--unavailable-partitions", action="store_true")
    p.add_argument("--under-min-isr-partitions", action="store_true")
    p.add_argument("--at-min-isr-partitions", action="store_true")
    p.add_argument("--topics-with-overrides", action="store_true")
    p.add_argument("--describe-format", choices=("2.4", "1.x"), default="2.4",
                   help="output of Kafka 2.4+ (default) or the 1.x-2.3 header format")
    p.set_defaults(func=run)


# which options each action takes (Kafka's TopicCommand.checkArgs); others are refused, not ignored
_ACTION_OPTIONS = {
    "partitions": ("create", "alter"), "replication_factor": ("create",),
    "replica_assignment": ("create", "alter"), "config": ("create", "alter"), "delete_config": ("alter",),
    "if_not_exists": ("create",), "if_exists": ("alter", "delete", "describe"),
    "disable_rack_aware": ("create", "alter"), "force": ("delete",), "exclude_internal": ("list", "describe"),
    "under_replicated_partitions": ("describe",), "unavailable_partitions": ("describe",),
    "topics_with_overrides": ("describe",),
}


def _check_option_actions(args: argparse.Namespace, action: str) -> None:
    for option, actions in _ACTION_OPTIONS.items():
        value = getattr(args, option)
        if value not in (None, False, []) and action not in actions:
            flag = option.replace("_", "-")
            raise InvalidInput(f'Option "[{flag}]" can\'t be used with option "[{action}]" (it is valid with '
                               f"{', '.join('--' + a for a in actions)}); remove --{flag}")
    if args.describe_format != "2.4" and action != "describe":
        raise InvalidInput(f'Option "[describe-format]" can\'t be used with option "[{action}]"; remove it')


def _check_args(args: argparse.Namespace) -> None:
    _check_option_actions(args, next(a for a in ("list", "describe", "create", "alter", "delete")
                                     if getattr(args, a)))
    if (args.create or args.alter or args.delete) and not args.topic:
        raise InvalidInput("--topic is required for --create, --alter and --delete")
    if args.create and args.replica_assignment is None:
        missing = [f for f, v in (("--partitions", args.partitions), ("--replication-factor",
                                                                      args.replication_factor)) if v is None]
        if missing:
            raise InvalidInput(f"Missing required argument(s) {', '.join(missing)} for --create (or give "
                               "--replica-assignment)")
    if args.replica_assignment is not None and args.replication_factor is not None:
        raise InvalidInput("--replication-factor cannot be combined with --replica-assignment")
    if args.create and args.replica_assignment is not None and args.partitions is not None:
        raise InvalidInput("--partitions cannot be combined with --replica-assignment for --create")
    if args.alter and args.partitions is None and not args.config and not args.delete_config:
        raise InvalidInput("--alter needs --partitions and/or --config/--delete-config")


def _matching(writer: ZkWriter, args: argparse.Namespace) -> list[str]:
    """Topics matching ``--topic``; none is an error except for --list or with --if-exists (as Kafka)."""
    names = admin.match_topics(admin.list_topics(writer.client, args.exclude_internal), args.topic)
    if args.topic is not None and not names and not args.if_exists and not args.list:
        raise TopicNotFound(f"Topic '{args.topic}' does not exist as expected (use --if-exists to ignore)")
    return names


def _refuse_min_isr_filters(args: argparse.Namespace) -> None:
    """Kafka 2.4's TopicCommand refuses these two filters with --zookeeper (checkInvalidArgs)."""
    for flag in ("under-min-isr-partitions", "at-min-isr-partitions"):
        if getattr(args, flag.replace("-", "_")):
            raise InvalidInput(f'Option "[{flag}]" can\'t be used with option "[zookeeper]" (as Kafka 2.4: '
                               "min.insync.replicas is known only to the brokers; use kafka-topics "
                               "--bootstrap-server, or the cluster_health DAG)")


def _alter(w: ZkWriter, args: argparse.Namespace, names: list[str], config: dict[str, str],
           assignment: dict[int, tuple[int, ...]] | None, say: bool) -> None:
    """``--alter`` on every matching topic through ``w`` (a :func:`planner` first: nothing printed)."""
    for name in names:
        if args.partitions is not None:
            if say:
                print("WARNING: If partitions are increased for a topic that has a key, the partition logic "
                      "or ordering of the messages will be affected")
            admin.add_partitions(w, name, args.partitions, assignment, args.disable_rack_aware)
            if say:
                print("Adding partitions succeeded!")
        if config or args.delete_config:
            alter_config(w, "topics", name, config, args.delete_config or [])
            if say:
                print(f"Updated config for topic {name}.")


def run(args: argparse.Namespace) -> int:
    _refuse_min_isr_filters(args)
    _check_args(args)
    config = parse_config_options(args.config)
    assignment = parse_replica_assignment(args.replica_assignment) if args.replica_assignment else None
    task = next(a for a in ("list", "describe", "create", "alter", "delete") if getattr(args, a))
    with open_cluster(args, f"topics-{task}") as w:
        if args.list:          # as kafka-topics.sh: /brokers/topics and the deletion markers only
            marked = admin.marked_for_deletion(w.client)
            for name in _matching(w, args):
                print(f"{name} - marked for deletion" if name in marked else name)
        elif args.describe:
            names = _matching(w, args)
            snap = read_snapshot(w.client, topics=names)
            filters = DescribeFilters(args.under_replicated_partitions, args.unavailable_partitions,
                                      args.under_min_isr_partitions, args.at_min_isr_partitions,
                                      args.topics_with_overrides, args.exclude_internal)
            for line in describe_lines(snap, names, filters, args.describe_format):
                print(line)
        elif args.create:
            res = admin.create_topic(w, None, args.topic, args.partitions, args.replication_factor, config,
                                     assignment, args.disable_rack_aware, if_not_exists=args.if_not_exists)
            if res.warning:
                print(res.warning)
            print_planned(w)
            if res.created:
                print(f"Created topic {args.topic}.")
        elif args.alter:
            validate_topic_config(config)
            names = _matching(w, args)
            _alter(planner(w), args, names, config, assignment, say=False)   # every topic checked first
            _alter(w, args, names, config, assignment, say=True)
            print_planned(w)
        else:
            names = _matching(w, args)
            internal = [n for n in names if n in admin.INTERNAL_TOPICS]
            if internal and not args.force:
                raise InvalidInput(f"Topic {internal[0]} is a kafka internal topic and is not allowed to be marked "
                                   "for deletion.")
            for name in names:
                admin.delete_topic(planner(w), None, name, force=args.force, if_exists=args.if_exists)
            for name in names:
                res = admin.delete_topic(w, None, name, force=args.force, if_exists=args.if_exists)
                if res.outcome == "already_marked":
                    print(f"Topic {name} is already marked for deletion.")
                elif res.outcome == "marked":
                    print(f"Topic {name} is marked for deletion.")
                    print("Note: This will have no impact if delete.topic.enable is not set to true.")
            print_planned(w)
    sys.stdout.flush()
    return 0
