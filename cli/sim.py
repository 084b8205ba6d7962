"""``kafka-runbook sim``: run the Kafka emulator against a ZooKeeper, in the foreground.

``kafka-runbook sim --zookeeper HOST:PORT/chroot --brokers 6 --racks 3 --topics N --partitions P
--replication-factor 3 --size-distribution lognormal --mean-size BYTES --seed S --speed 3600``
starts N simulated brokers and their controller on the chroot, seeds the topics (those that
already exist are kept), prints the connect string, and runs until SIGTERM/SIGINT, then closes
every session. ``--embedded-zookeeper`` starts a private ZooKeeper on 127.0.0.1 instead (the
connect string is printed). While it runs, partition sizes are published under
``/kafka-sim/log-dirs`` every second.

``kafka-runbook sim log-dirs --zookeeper …`` prints the sizes as ``kafka-log-dirs.sh
--describe`` prints its JSON. ``kafka-runbook sim fault --zookeeper … kill-broker 3`` (also
restart BROKER [STOP_S [START_S]] — a process restart with Kafka 2.4.1's controlled-shutdown and
registration timing, the rolling_restart runbook's local action — restart-broker, shutdown-broker, expire-session, move-controller [TO], stall-replica TOPIC P
BROKER [--resume], slow-broker BROKER RATE) asks the running emulator for a fault.
On a secured ZooKeeper each of them takes ``--zk-jaas FILE`` (the brokers' JAAS file; after the
subcommand for ``log-dirs``/``fault``) and ``--zk-set-acl`` (Kafka's ACLs on what they create).

Failure: bad flags or an unreachable ZooKeeper: one ``Error:`` line, exit 1.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from cli.common import add_zk_auth_arguments, credentials_from_args
from kafka_zk.errors import InvalidInput


def _bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not true or false")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("sim", help="run the Kafka controller/broker emulator",
                              description=__doc__.splitlines()[0])
    p.add_argument("--zookeeper", metavar="HOST:PORT/CHROOT")
    p.add_argument("--embedded-zookeeper", action="store_true",
                   help="start a private ZooKeeper on 127.0.0.1 (chroot /kafka)")
    p.add_argument("--zookeeper-port", type=int, default=None, metavar="PORT",
                   help="with --embedded-zookeeper: its client port on 127.0.0.1 (default: a free one)")
    p.add_argument("--listener-base-port", type=int, default=None, metavar="PORT",
                   help="the brokers' Kafka listeners on 127.0.0.1: the n-th broker (ids sorted) on PORT+n "
                        "(default: free ports, printed at start)")
    p.add_argument("--brokers", type=int, default=6)
    p.add_argument("--racks", type=int, default=3, help="0 = no broker.rack")
    p.add_argument("--topics", type=int, default=10)
    p.add_argument("--partitions", type=int, default=10)
    p.add_argument("--replication-factor", type=int, default=3)
    p.add_argument("--size-distribution", choices=("lognormal", "uniform", "fixed"), default="lognormal")
    p.add_argument("--mean-size", type=float, default=1024 ** 3, metavar="BYTES")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--speed", type=float, default=3600.0, help="simulated seconds per wall second")
    p.add_argument("--network-rate", type=float, default=100 * 1024 ** 2, metavar="BYTES_PER_S")
    p.add_argument("--delete-topic-enable", type=_bool, default=True, metavar="true|false")
    p.add_argument("--auto-leader-rebalance", type=_bool, default=False, metavar="true|false")
    p.add_argument("--state-change-logs", metavar="DIR", default=None,
                   help="each broker writes DIR/broker-<id>/state-change.log (Kafka 2.4's format)")
    p.add_argument("--disk-capacity", type=float, default=None, metavar="BYTES",
                   help="every broker's disk size; a full disk stops its followers fetching (default: unlimited)")
    p.add_argument("--fixed-cost", choices=("kafka-2.4.1", "off"), default="kafka-2.4.1",
                   help="each reassignment's fixed cost (~1 s per move, measured on Kafka 2.4.1; concurrent "
                        "moves pay it once) or off: moves as fast as their copy (default: kafka-2.4.1)")
    p.add_argument("--from-snapshot", metavar="SNAPSHOT", default=None,
                   help="seed a copy of a real cluster from its snapshot.jsonl (brokers, racks, topics, "
                        "assignments, configs) instead of --brokers/--topics/...")
    p.add_argument("--sizes", metavar="LOG_DIRS", default=None,
                   help="with --from-snapshot: partition sizes (kafka-log-dirs --describe output or sizes.jsonl)")
    p.add_argument("--capacity", metavar="FILE", default=None,
                   help="with --from-snapshot: the brokers' disks (the plan's capacity file)")
    add_zk_auth_arguments(p)
    p.set_defaults(func=run)
    sub = p.add_subparsers(dest="sim_command", metavar="{log-dirs,fault}")
    ld = sub.add_parser("log-dirs", help="print the emulator's kafka-log-dirs --describe JSON")
    ld.add_argument("--zookeeper", required=True, metavar="HOST:PORT/CHROOT", dest="log_dirs_zookeeper")
    add_zk_auth_arguments(ld)
    ld.set_defaults(func=run_log_dirs)
    f = sub.add_parser("fault", help="ask the running emulator for a fault")
    f.add_argument("--zookeeper", required=True, metavar="HOST:PORT/CHROOT", dest="fault_zookeeper")
    f.add_argument("--timeout", type=float, default=30.0)
    f.add_argument("fault", choices=("restart", "kill-broker", "restart-broker", "shutdown-broker", "expire-session",
                                     "move-controller", "stall-replica", "slow-broker", "corrupt-record"))
    f.add_argument("values", nargs="*")
    f.add_argument("--resume", action="store_true", help="stall-replica: resume instead")
    add_zk_auth_arguments(f)
    f.set_defaults(func=run_fault)


def _fault_args(fault: str, values: list[str], resume: bool) -> dict:
    try:
        if fault == "restart":
            broker, *timing = values
            if len(timing) > 2:
                raise ValueError(values)
            return {"broker": int(broker), **dict(zip(("stop_s", "start_s"), map(float, timing)))}
        if fault in ("kill-broker", "restart-broker", "shutdown-broker", "expire-session"):
            (broker,) = values
            return {"broker": int(broker)}
        if fault == "corrupt-record":
            topic, partition, broker, offset, *how = values
            if len(how) > 1:
                raise ValueError(values)
            args = {"topic": topic, "partition": int(partition), "broker": int(broker), "offset": int(offset)}
            return {**args, "how": how[0]} if how else args
        if fault == "move-controller":
            return {"to": int(values[0]) if values else None}
        if fault == "stall-replica":
            topic, partition, broker = values
            return {"topic": topic, "partition": int(partition), "broker": int(broker),
                    "stalled": not resume}
        broker, rate = values
        return {"broker": int(broker), "rate": float(rate)}
    except ValueError:
        raise InvalidInput(f"sim fault {fault}: wrong arguments {values}; e.g. restart 3 [STOP_S [START_S]], kill-broker 3, "
                           "move-controller [TO], stall-replica TOPIC PARTITION BROKER, "
                           "slow-broker BROKER BYTES_PER_S, corrupt-record TOPIC PARTITION BROKER OFFSET [value|bytes|header]") from None


def run_fault(args: argparse.Namespace) -> int:
    # local: a subcommand loads only what it runs (CLI start-up)
    from kafka_sim.control import send_command
    from kafka_zk.connect import close, connect
    client = connect(args.fault_zookeeper, credentials=credentials_from_args(args))
    try:
        result = send_command(client, args.fault, _fault_args(args.fault, args.values, args.resume),
                              args.timeout)
    finally:
        close(client)
    print(f"{args.fault}: done" + (f" ({result})" if result is not None else ""))
    return 0


def run_log_dirs(args: argparse.Namespace) -> int:
    # local: a subcommand loads only what it runs (CLI start-up)
    from kafka_zk.connect import close, connect
    from kafka_zk.log_dirs import read_published_log_dirs
    client = connect(args.log_dirs_zookeeper, credentials=credentials_from_args(args))
    try:
        print(read_published_log_dirs(client)[0])
    finally:
        close(client)
    return 0


def check_ports_free(wanted: list[tuple[str, int]]) -> None:
    """Every (option, port) can be listened on at 127.0.0.1, before anything starts; else
    :class:`InvalidInput` naming the option, the port and the fix."""
    import socket

    for option, port in wanted:
        if not 1 <= port <= 65535:
            raise InvalidInput(f"{option}: port {port} is not a TCP port (1-65535)")
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError as exc:
                raise InvalidInput(f"{option}: 127.0.0.1:{port} cannot be listened on ({exc.strerror}); "
                                   "choose another port or stop what uses it") from None


def _fixed_cost(spec) -> str:
    """The per-move fixed cost the emulator pays, as the start line says it."""
    delays = (spec.reassign_reaction_s, spec.fetch_start_s, spec.reassign_completion_s)
    return ("per-move fixed cost off" if not any(delays) else
            "per-move fixed cost " + "/".join(f"{d:g}" for d in delays) + " s (reaction/fetch start/completion)")


def run(args: argparse.Namespace) -> int:
    # local: a subcommand loads only what it runs (CLI start-up)
    from kafka_sim import seed
    from kafka_sim.cluster import ClusterSpec, EmulatedCluster
    from kafka_sim.spec import KAFKA_2_4_1_FIXED_COST, NO_FIXED_COST
    from kafka_sim.control import CommandQueue
    from kafka_sim.zookeeper_server import EmbeddedZooKeeper
    from kafka_zk.zk_auth import NO_AUTH

    if not args.zookeeper and not args.embedded_zookeeper:
        raise InvalidInput("give --zookeeper HOST:PORT/chroot or --embedded-zookeeper")
    if args.zookeeper_port is not None and not args.embedded_zookeeper:
        raise InvalidInput("--zookeeper-port is the port of --embedded-zookeeper; with --zookeeper the port is in "
                           "its HOST:PORT")
    knobs = dict(network_rate=args.network_rate, speed=args.speed, delete_topic_enable=args.delete_topic_enable,
                 auto_leader_rebalance=args.auto_leader_rebalance, seed=args.seed,
                 state_change_logs=args.state_change_logs, listener_base_port=args.listener_base_port,
                 **(NO_FIXED_COST if args.fixed_cost == "off" else KAFKA_2_4_1_FIXED_COST))
    copy = _snapshot_copy(args, knobs)
    if copy is not None:
        spec, snapshot, copy_sizes = copy
        layout, sizes = {}, {}
    else:
        racks = seed.broker_racks(args.brokers, args.racks)
        layout = seed.topic_layout(racks, args.topics, args.partitions, args.replication_factor, args.seed)
        sizes = seed.partition_sizes(layout, args.size_distribution, args.mean_size, args.seed)
        spec = ClusterSpec(brokers=racks, **knobs, disk_capacity=None if args.disk_capacity is None
                           else {b: int(args.disk_capacity) for b in racks})
    check_ports_free(([("--zookeeper-port", args.zookeeper_port)] if args.zookeeper_port is not None else [])
                     + ([(f"--listener-base-port (broker #{n})", args.listener_base_port + n)
                         for n in range(len(spec.brokers))] if args.listener_base_port is not None else []))
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server = EmbeddedZooKeeper(port=args.zookeeper_port).start() if args.embedded_zookeeper else None
    connect_string = f"{server.connect_string}/kafka" if server else args.zookeeper
    cluster = EmulatedCluster(connect_string, spec,
                              credentials=credentials_from_args(args) if not server else NO_AUTH)
    try:
        if copy is not None:
            _require_private(connect_string, cluster.credentials)
        cluster.start()
        existing = set(cluster.topic_names())
        if copy is not None:
            report = _seed_copy(cluster, snapshot, copy_sizes, existing)
            print(f"kafka-runbook sim: copy of {args.from_snapshot}: {report.line()}; not copied: "
                  f"{'; '.join(report.not_copied)}", file=sys.stderr, flush=True)
        todo = {n: (a, sizes[n], None) for n, a in layout.items() if n not in existing}
        if todo:
            cluster.create_topics(todo)
        print(f"kafka-runbook sim: {len(spec.brokers)} brokers, {_partitions(cluster, layout, copy)} "
              f"partitions, controller {cluster.controller_id()}, speed {args.speed:g}x, {_fixed_cost(spec)}", flush=True)
        print(connect_string, flush=True)
        print(f"kafka-runbook sim: Kafka listeners: --broker-list {cluster.broker_list()}", file=sys.stderr, flush=True)
        commands = CommandQueue(cluster.tool_client)
        while not stop.is_set():
            commands.run_pending(cluster, timeout=1.0)
            cluster.publish_log_dirs()
    finally:
        import logging
        logging.getLogger("kazoo.client").setLevel(logging.ERROR)   # sessions closing: expected
        cluster.stop()
        if server is not None:
            server.stop()
    print("kafka-runbook sim: stopped, sessions closed", file=sys.stderr)
    return 0


def _snapshot_copy(args: argparse.Namespace, knobs: dict):
    """(spec, snapshot, sizes) of ``--from-snapshot``, or None; every file read and checked first."""
    if args.from_snapshot is None:
        if args.sizes or args.capacity:
            raise InvalidInput("--sizes and --capacity go with --from-snapshot SNAPSHOT")
        return None
    # local: a subcommand loads only what it runs (CLI start-up)
    from kafka_sim.from_snapshot import spec_from_snapshot
    from kafka_zk.capacity import read_capacity_file
    from formats.sizes_file import load_sizes
    from formats.snapshot_file import load_snapshot

    if args.disk_capacity is not None:
        raise InvalidInput("--disk-capacity is for synthetic clusters; with --from-snapshot give --capacity FILE")
    snapshot = load_snapshot(args.from_snapshot)
    sizes = load_sizes(args.sizes) if args.sizes else None
    capacity = read_capacity_file(args.capacity) if args.capacity else None
    return spec_from_snapshot(snapshot, capacity, **knobs), snapshot, sizes


def _require_private(connect_string: str, credentials) -> None:
    """Refuse, before anything is written, a chroot where brokers or topics already live: a copy
    goes into a private chroot, never beside a real cluster."""
    # local: a subcommand loads only what it runs (CLI start-up)
    from kafka_zk import paths
    from kafka_zk.connect import close, connect

    client = connect(connect_string, credentials=credentials)
    try:
        taken = [p for p in (paths.BROKER_IDS, paths.BROKER_TOPICS)
                 if client.exists(p) is not None and client.get_children(p)]
    finally:
        close(client)
    if taken:
        raise InvalidInput(f"{connect_string} already holds {' and '.join(taken)}: --from-snapshot seeds an empty, "
                           "private chroot; give a new chroot or --embedded-zookeeper")


def _seed_copy(cluster, snapshot, sizes, existing: set[str]):
    """Seed the snapshot's copy (the chroot was checked empty before the emulator started)."""
    # local: a subcommand loads only what it runs (CLI start-up)
    from kafka_sim.from_snapshot import seed_from_snapshot

    return seed_from_snapshot(cluster, snapshot, sizes, who="kafka-runbook sim --from-snapshot")


def _partitions(cluster, layout: dict, copy) -> int:
    if copy is not None:
        return copy[1].partition_count
    return sum(len(a) for a in layout.values())
