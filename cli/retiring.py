"""``kafka-runbook retiring``: the brokers being retired, which plans leave out, and releasing them.

An approved decommission records the brokers it removes (kafka_zk/retiring.py); every later plan,
in the runbooks and in ``kafka-runbook plan --zookeeper``, leaves them out as destinations until a
person releases them here (e.g. the broker was repaired and is back in service). ``list`` prints the
cluster's retiring brokers; ``release --broker 3[,4]`` releases them. The cluster is named by
``--zookeeper`` (its ``/cluster/id`` keys the file); the file is ``--retiring-file``, default
``$KAFKA_RUNBOOKS_RETIRING_FILE``, else the runbooks' ``<run_root>/retiring_brokers.json``
(``$KAFKA_RUNBOOKS_RUN_ROOT``, else their default run root: :func:`kafka_zk.retiring.default_path`).

Failure: a malformed file, a broker that is not retiring: one ``Error:`` line, exit 1, nothing changed.
"""

from __future__ import annotations

import argparse

from kafka_zk.errors import InvalidInput
from kafka_zk.retiring import ENV, RetiringFile, cluster_id, default_path
from kafka_zk.validation import check_brokers_to_remove
from procedures.run_folder import default_run_root


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = subparsers.add_parser("retiring", help="brokers drained by a decommission, excluded from later plans",
                              description=__doc__.splitlines()[0])
    p.add_argument("action", choices=("list", "release"))
    p.add_argument("--zookeeper", required=True, metavar="HOST:PORT[/CHROOT]")
    p.add_argument("--retiring-file", metavar="FILE", default=None,
                   help=f"the runbooks' retiring-brokers file (default ${ENV}, else "
                        "$KAFKA_RUNBOOKS_RUN_ROOT/retiring_brokers.json, else the runbooks' default run root's)")
    p.add_argument("--broker", metavar="IDS", help="release: comma-separated broker ids, e.g. 3,4")
    p.set_defaults(func=run)


def retiring_of(args: argparse.Namespace) -> tuple[RetiringFile, str]:
    # local: a subcommand loads only what it runs (CLI start-up)
    from kafka_zk.connect import close, connect

    client = connect(args.zookeeper)
    try:
        cid = cluster_id(client)
    finally:
        close(client)
    if cid is None:
        raise InvalidInput(f"{args.zookeeper} has no /cluster/id: no Kafka broker ever registered there (check the "
                           "chroot)")
    return RetiringFile.load(args.retiring_file or default_path(default_run_root())), cid


def run(args: argparse.Namespace) -> int:
    if args.action == "release":
        ids = check_brokers_to_remove(args.broker or "", "--broker")     # kafka_zk.validation's rule
    retiring, cid = retiring_of(args)
    current = retiring.of(cid)
    if args.action == "list":
        for e in current.values():
            print(e.text())
        if not current:
            print(f"no retiring broker in cluster {cid}")
        return 0
    unknown = [b for b in ids if b not in current]
    if unknown:
        raise InvalidInput(f"broker(s) {unknown} are not retiring in cluster {cid} (retiring: "
                           f"{sorted(current) or 'none'}); nothing changed")
    retiring.release(cid, ids)
    retiring.save()
    print(f"released broker(s) {ids}: later plans may place replicas on them again")
    return 0
