"""The plan job's operations: which partitions each one needs, and which kernel plans it.

Each operation names a :class:`spark_jobs.selection.Selection` of the partitions it must see on
the driver (read by Spark or by the driver itself) and a kernel call on the resulting slice, followed by
:func:`planning.kernels.validate.validate_plan`. Only decommission works on a slice plus a
baseline (replace too: it needs only the replaced brokers' partitions); the topic operations bring their topics' partitions; add-brokers, rebalance, election,
delete-topics by regex and replace-dead-targets (the stuck runbook's rewrite: the placer weighs
every partition's load) bring every partition (they may touch any). Failure: bad arguments
raise :class:`kafka_zk.errors.InvalidInput` naming the flag to fix.
"""

from __future__ import annotations

import argparse
from typing import Callable

from kafka_zk.admin.reassignment import targets_from_file_entries
from kafka_zk.capacity import DiskCapacity, read_capacity_file
from kafka_zk.codecs import decode_reassignment_file
from kafka_zk.errors import InvalidInput
from planning.plan_folder.read import load_plan_artifacts
from planning.election import election_plan, election_scope, plan_election
from planning.model import Plan
from planning.topic_deletion import deletion_plan, select_topics
from kafka_zk.validation import parse_broker_ids, parse_replacements, parse_topic_names
from planning.kernels.user_json import plan_user_reassignment
from planning.kernels.budget_rebalance import RebalanceBudget, RebalanceTarget, plan_budget_rebalance
from planning.kernels.decommission import plan_decommission
from planning.kernels.add_and_move import plan_add_brokers, plan_move_topics
from planning.kernels.replication import plan_change_replication_factor
from planning.kernels.replace import OPERATION as REPLACE, plan_replace
from planning.kernels.rollback import plan_rollback
from planning.kernels.stuck_rewrite import OPERATION as REPLACE_DEAD_TARGETS, plan_replacements
from planning.kernels.validate import validate_plan
from spark_jobs.plan_input import PlanInput
from spark_jobs.selection import Selection


def _brokers(args: argparse.Namespace) -> list[int]:
    return parse_broker_ids(args.brokers, "--brokers")


def _replacements(args: argparse.Namespace) -> dict[int, int]:
    return parse_replacements(args.brokers, getattr(args, "replace_with", ""), "--brokers", "--replace-with")


def _topics(args: argparse.Namespace, required: bool = True) -> list[str]:
    return parse_topic_names(args.topics, "--topics", required)


def _in_topics(names: list[str]) -> Selection:
    return Selection.of_topics(names) if names else Selection.every()


def _user_entries(args: argparse.Namespace):
    if not args.reassignment_json_file:
        raise InvalidInput("--op reassign-json needs --reassignment-json-file FILE")
    try:
        with open(args.reassignment_json_file, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise InvalidInput(f"--reassignment-json-file {args.reassignment_json_file}: {exc.strerror}") from None
    return decode_reassignment_file(text)


def _rollback_source(args: argparse.Namespace):
    """(recorded assignment, the run's targets or None, what it came from) for ``--op rollback``."""

    if getattr(args, "rollback_from", None):
        plan = load_plan_artifacts(args.rollback_from)     # hash-checked: an edited plan does not load
        return dict(plan.rollback), dict(plan.target), args.rollback_from
    if args.reassignment_json_file:
        return targets_from_file_entries(_user_entries(args)), None, args.reassignment_json_file
    raise InvalidInput("--op rollback needs --rollback-from RUN/plan or --reassignment-json-file FILE")


def _rollback(args: argparse.Namespace, data: PlanInput) -> Plan:
    original, targets, source = _rollback_source(args)
    return _checked(data, plan_rollback(data.snapshot, original, targets, data.sizes, args.seed, source))


def capacity_of(args: argparse.Namespace) -> DiskCapacity | None:
    """The ``--capacity`` file, read and checked once per job (None when not given)."""
    if not getattr(args, "capacity", None):
        return None
    cached = getattr(args, "_disk_capacity", None)
    if cached is None:
        cached = read_capacity_file(args.capacity, getattr(args, "disk_threshold_pct", None))
        args._disk_capacity = cached
    return cached


def _checked(data: PlanInput, plan: Plan, removed=(), capacity: DiskCapacity | None = None) -> Plan:
    limits = capacity.limits(sorted(set(data.snapshot.brokers) | set(data.baseline or {}))) if capacity else None
    validate_plan(data.snapshot, plan, removed, data.sizes, data.baseline, limits)
    return plan


def _rf(args: argparse.Namespace) -> int:
    if args.replication_factor is None:
        raise InvalidInput("--op change-rf needs --replication-factor N")
    return args.replication_factor


def _rebalance(args: argparse.Namespace, data: PlanInput) -> Plan:
    budget = RebalanceBudget(getattr(args, "max_replicas_moved", None), getattr(args, "max_bytes_moved", None))
    target = RebalanceTarget(getattr(args, "target_replica_spread", 1), getattr(args, "target_bytes_spread", 0.10),
                             getattr(args, "target_leader_spread", 1))
    return _checked(data, plan_budget_rebalance(data.snapshot, data.sizes, budget, target, args.seed).plan)


OPERATIONS: dict[str, tuple[Callable[[argparse.Namespace], Selection],
                            Callable[[argparse.Namespace, PlanInput], Plan]]] = {
    "decommission": (lambda a: Selection.every() if getattr(a, "allow_extra_moves", False)
                     else Selection.on_brokers(_brokers(a)),
                     lambda a, d: _checked(d, plan_decommission(d.snapshot, _brokers(a), d.sizes, a.seed,
                                                                d.baseline, capacity_of(a),
                                                                getattr(a, "allow_extra_moves", False)),
                                           _brokers(a), capacity_of(a))),
    REPLACE: (lambda a: Selection.on_brokers(sorted(_replacements(a))),
              lambda a, d: _checked(d, plan_replace(d.snapshot, _replacements(a), d.sizes, a.seed),
                                    sorted(_replacements(a)))),
    "add-brokers": (lambda a: Selection.every(),
                    lambda a, d: _checked(d, plan_add_brokers(d.snapshot, _brokers(a), d.sizes, a.seed))),
    "rebalance": (lambda a: Selection.every(), _rebalance),
    "change-rf": (lambda a: _in_topics(_topics(a)),
                  lambda a, d: _checked(d, plan_change_replication_factor(d.snapshot, _topics(a), _rf(a),
                                                                          d.sizes, a.seed))),
    "move-topics": (lambda a: _in_topics(_topics(a)),
                    lambda a, d: _checked(d, plan_move_topics(d.snapshot, _topics(a), _brokers(a), d.sizes,
                                                              a.seed),
                                             sorted(set(d.snapshot.brokers) - set(_brokers(a))))),
    "reassign-json": (lambda a: _in_topics(sorted({e.topic for e in _user_entries(a)})),
                      lambda a, d: _checked(d, plan_user_reassignment(d.snapshot, _user_entries(a), d.sizes,
                                                                      a.seed))),
    "rollback": (lambda a: _in_topics(sorted({tp.topic for tp in _rollback_source(a)[0]})), _rollback),
    "election": (lambda a: _in_topics(_topics(a, False)),
                 lambda a, d: election_plan(plan_election(d.snapshot, election_scope(d.snapshot, _topics(a, False)),
                                                          a.max_znode_bytes, a.batch_size))),
    "delete-topics": (lambda a: Selection.every() if a.topic_regex else _in_topics(_topics(a)),
                      lambda a, d: deletion_plan(select_topics(d.snapshot, _topics(a, False), a.topic_regex,
                                                               batch_size=a.batch_size or 50))),
    REPLACE_DEAD_TARGETS: (lambda a: Selection.every(), lambda a, d: plan_replacements(d.snapshot, a.seed)),
}


def selection(args: argparse.Namespace) -> Selection:
    """The partitions ``args.op`` must see one by one (:mod:`spark_jobs.selection`)."""
    return OPERATIONS[args.op][0](args)


def run_kernel(args: argparse.Namespace, data: PlanInput) -> Plan:
    return OPERATIONS[args.op][1](args, data)

