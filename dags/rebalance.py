"""rebalance: even out replica counts, bytes and preferred leaders under a move budget.

One instance of the skeleton in ``operators/runbooks/reassignment.py``: this file says only what
differs — its Params (the budget and the target spreads) and its plan (``--op rebalance``,
``planning/kernels/budget_rebalance.py``).

Failure: the skeleton's — a failed step stops those after it; throttles removed, report and notice still sent.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.plan.balance_ops import RebalancePlanOperator
from operators.runbooks.reassignment import ReassignmentRunbook, reassignment_runbook

PARAMS = {
    "max_replicas_moved": Param(None, type=["null", "integer"], minimum=0,
                                description="Move budget: at most this many new replicas (null: no cap)"),
    "max_bytes_moved": Param(None, type=["null", "integer"], minimum=0,
                             description="Move budget: at most this many bytes copied (null: no cap; needs "
                                         "sizes_file)"),
    "target_replica_spread": Param(1, type="integer", minimum=0,
                                   description="Balanced when replica counts per broker differ by at most this"),
    "target_bytes_spread_pct": Param(10, type="number", minimum=0, maximum=1000,
                                     description="Balanced when (max - min) / mean of bytes per broker is at most "
                                                 "this %, with sizes_file"),
    "target_leader_spread": Param(1, type="integer", minimum=0,
                                  description="Balanced when preferred-leader counts per broker differ by at most "
                                              "this (evened by re-ordering replicas: no data moved)"),
}

dag = reassignment_runbook(ReassignmentRunbook(
    dag_id="rebalance",
    description="Even out replicas, bytes and preferred leaders across brokers under a move budget",
    params=PARAMS,
    plan=lambda args: RebalancePlanOperator(
        max_replicas_moved="{{ params.max_replicas_moved }}", max_bytes_moved="{{ params.max_bytes_moved }}",
        target_replica_spread="{{ params.target_replica_spread }}",
        target_bytes_spread_pct="{{ params.target_bytes_spread_pct }}",
        target_leader_spread="{{ params.target_leader_spread }}", **args),
    approval_title="Rebalance (budget: {{ params.max_replicas_moved if params.max_replicas_moved is not none "
                   "else 'any' }} replicas, {{ params.max_bytes_moved if params.max_bytes_moved is not none "
                   "else 'any' }} bytes)",
))
