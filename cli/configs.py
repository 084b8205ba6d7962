"""``kafka-runbook configs``: what ``kafka-configs.sh --zookeeper`` does for topics and brokers.

``--describe`` prints ``Configs for topic 'foo' are k=v,...`` (all entities of the type when no
name is given), entities in ZooKeeper's child order and keys in the order of the
``java.util.Properties`` Kafka 2.4.1 reads them into, on a Java 9+ JVM (both unsorted, as Kafka
prints them); ``--alter`` applies ``--add-config k=v,k2=[a,b]`` then ``--delete-config k,k2`` as
one read-modify-write of ``/config/<type>/<name>`` followed by one change notification, and
prints 2.4.1's ``Completed Updating config for entity: topic 'foo'.`` (its ZooKeeper path says
so for every entity type).
``--entity-default`` addresses ``/config/brokers/<default>``. ``--dry-run`` prints the writes.

Failure: unknown keys, bad values, deleting a key that is not set ("Invalid config(s): k"),
missing topic: one ``Error:`` line, exit 1, nothing written.
"""

from __future__ import annotations

import argparse

from cli.common import add_zk_arguments, open_cluster, print_planned
from kafka_zk.admin.configs import alter_config, check_entity, describe_config, list_entities, parse_config_pairs
from kafka_zk.errors import InvalidInput
from kafka_zk.java_order import java11_properties_order
from kafka_zk.paths import BROKER_DEFAULT_ENTITY


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = subparsers.add_parser("configs", help="describe/alter topic and broker config overrides (kafka-configs)",
                              description=__doc__.splitlines()[0])
    add_zk_arguments(p)
    p.add_argument("--entity-type", required=True, choices=("topics", "brokers"))
    who = p.add_mutually_exclusive_group()
    who.add_argument("--entity-name")
    who.add_argument("--entity-default", action="store_true", help="the brokers' <default> entity")
    act = p.add_mutually_exclusive_group(required=True)
    act.add_argument("--describe", action="store_true")
    act.add_argument("--alter", action="store_true")
    p.add_argument("--add-config", metavar="K=V,K2=V2")
    p.add_argument("--delete-config", metavar="K,K2")
    p.set_defaults(func=run)


def entity_label(entity_type: str, name: str) -> str:
    kind = "topic" if entity_type == "topics" else entity_type
    return f"default {kind}" if name == BROKER_DEFAULT_ENTITY else f"{kind} '{name}'"


def run(args: argparse.Namespace) -> int:
    name = BROKER_DEFAULT_ENTITY if args.entity_default else args.entity_name
    if args.entity_default and args.entity_type != "brokers":
        raise InvalidInput("--entity-default is only supported with --entity-type brokers here")
    if args.alter:
        if name is None:
            raise InvalidInput("--alter needs --entity-name (or --entity-default for brokers)")
        add = parse_config_pairs(args.add_config or "")
        delete = [k.strip() for k in (args.delete_config or "").split(",") if k.strip()]
        if not add and not delete:
            raise InvalidInput("--alter needs --add-config and/or --delete-config")
        check_entity(args.entity_type, name)
    elif args.add_config or args.delete_config:
        raise InvalidInput("--add-config/--delete-config are only valid with --alter")
    with open_cluster(args, f"configs-{'alter' if args.alter else 'describe'}") as w:
        if args.describe:
            names = [name] if name is not None else list_entities(w.client, args.entity_type)
            for n in names:
                cfg = describe_config(w.client, args.entity_type, n)
                print(f"Configs for {entity_label(args.entity_type, n)} are "
                      + ",".join(f"{k}={cfg[k]}" for k in java11_properties_order(cfg)))
            return 0
        alter_config(w, args.entity_type, name, add, delete)
        print_planned(w)
        print(f"Completed Updating config for entity: {entity_label(args.entity_type, name)}.")
    return 0
