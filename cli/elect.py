"""``kafka-runbook elect``: preferred replica election through ZooKeeper, in batches.

Like ``kafka-preferred-replica-election.sh --zookeeper``: ``--path-to-json-file F`` names the
partitions (``{"partitions":[{"topic":"foo","partition":1}]}``), otherwise every partition of
the cluster; partitions that do not exist are skipped with Kafka's message. Unlike the tool,
the list is split into batches whose znode payload stays under ``--batch-bytes`` (default
512 KiB); before each next batch the command waits (up to ``--batch-timeout`` seconds) for the
controller to delete the node. ``--only-eligible`` leaves out partitions whose preferred
replica already leads or could not be elected. ``--dry-run`` prints the batches' writes.

Failure: a malformed file, an election already in progress, a controller that does not
process a batch in time: one ``Error:`` line, exit 1.
"""

from __future__ import annotations

import argparse

from cli.common import add_zk_arguments, open_cluster, print_planned, read_text_file, seconds
from kafka_zk import paths
from kafka_zk.admin.election import election_batches, submit_preferred_election
from kafka_zk.codecs import PreferredElectionRequest
from kafka_zk.errors import InvalidInput
from kafka_zk.limits import ADMIN_BATCH_BYTES
from planning.election import election_file_scope, plan_election
from kafka_zk.snapshot import read_snapshot
from kafka_zk.waits import wait_node_gone


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = subparsers.add_parser("elect", help="preferred replica election (kafka-preferred-replica-election)",
                              description=__doc__.splitlines()[0])
    add_zk_arguments(p)
    p.add_argument("--path-to-json-file", metavar="FILE")
    p.add_argument("--batch-bytes", type=int, default=ADMIN_BATCH_BYTES)
    p.add_argument("--batch-partitions", type=int)
    p.add_argument("--batch-timeout", type=seconds, default=60.0, metavar="SECONDS")
    p.add_argument("--only-eligible", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    wanted = None
    if args.path_to_json_file:
        wanted = election_file_scope(read_text_file(args.path_to_json_file, "--path-to-json-file"))
    if args.batch_bytes <= 0:
        raise InvalidInput("--batch-bytes must be positive")
    if args.batch_partitions is not None and args.batch_partitions <= 0:
        raise InvalidInput(f"--batch-partitions {args.batch_partitions}: give at least 1 partition per batch")
    with open_cluster(args, "elect") as w:
        snap = read_snapshot(w.client, topics=None if wanted is None else {tp.topic for tp in wanted},
                             with_configs=False)
        partitions = list(wanted) if wanted is not None else [p.tp for p in snap.partitions()]
        for tp in partitions:
            if not snap.has_partition(tp):
                print(f"Skipping preferred replica leader election for partition {tp} since it doesn't exist.")
        partitions = [tp for tp in partitions if snap.has_partition(tp)]
        if args.only_eligible:      # the runbook's planner: candidates only, in batches
            batches = list(plan_election(snap, partitions, args.batch_bytes, args.batch_partitions).batches)
        else:                       # as Kafka's tool: every existing partition, in batches
            batches = election_batches(partitions, args.batch_bytes, args.batch_partitions) if partitions else []
        if not batches:
            print("No partition to elect.")
            return 0
        for i, batch in enumerate(batches):
            if i > 0 and not w.dry_run:
                wait_node_gone(w.client, paths.PREFERRED_REPLICA_ELECTION, args.batch_timeout)
                snap = read_snapshot(w.client, topics={tp.topic for tp in batch}, with_configs=False)
            sub = submit_preferred_election(w, snap, batch)
            if sub.submitted:
                print("Created preferred replica election path with "
                      + PreferredElectionRequest(sub.submitted).encode().decode())
                print("Successfully started preferred replica election for partitions "
                      + ",".join(map(str, sub.submitted)))
        print_planned(w)
    return 0
