"""The plan job's operations: which partitions each one needs, and which kernel plans it.

Each operation names a Spark SQL predicate selecting the partitions it must see on the driver
(:func:`touched_sql`) and a kernel call on the resulting slice (:func:`run_kernel`), followed
by :func:`spark_jobs.kernels.validate.validate_plan`. Failure: bad arguments raise
:class:`kafka_zk.errors.InvalidInput` naming the flag to fix.
"""

from __future__ import annotations

import argparse
from typing import Callable

from kafka_zk.errors import InvalidInput
from spark_jobs.kernels.decommission import plan_decommission
from spark_jobs.kernels.model import Plan
from spark_jobs.kernels.validate import validate_plan
from spark_jobs.spark_io import SparkInput, overlaps


def _brokers(args: argparse.Namespace) -> list[int]:
    from spark_jobs.plan_job import int_list

    ids = int_list(args.brokers, "--brokers")
    if not ids:
        raise InvalidInput(f"--op {args.op} needs --brokers, e.g. --brokers 3,4")
    return ids


def _decommission(args: argparse.Namespace, data: SparkInput) -> Plan:
    removed = _brokers(args)
    plan = plan_decommission(data.snapshot, removed, data.sizes, args.seed, data.baseline)
    validate_plan(data.snapshot, plan, removed, data.sizes, data.baseline)
    return plan


OPERATIONS: dict[str, tuple[Callable[[argparse.Namespace], str | None],
                            Callable[[argparse.Namespace, SparkInput], Plan]]] = {
    "decommission": (lambda a: overlaps(_brokers(a)), _decommission),
}


def touched_sql(args: argparse.Namespace) -> str | None:
    return OPERATIONS[args.op][0](args)


def run_kernel(args: argparse.Namespace, data: SparkInput) -> Plan:
    return OPERATIONS[args.op][1](args, data)
