"""rebalance: even out replica counts, bytes and preferred leaders under a move budget.

One instance of the skeleton in ``operators/runbooks/reassignment.py``: this file says only what
differs — its Params (the budget and the target spreads) and its plan (``--op rebalance``,
``planning/kernels/budget_rebalance.py``). Steps (task ids): snapshot → plan →
render_plan_report → approve → guards → set_throttles (setup) → execute_waves → final_verify →
remove_throttles (teardown) → elect_preferred_leaders → final_report → notify.

Failure: any step that fails stops the steps after it; the throttles are still removed (teardown),
the report and the notification still run, and the notify step fails the run.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.guides import runbook_guide
from operators.plan.balance_ops import RebalancePlanOperator
from operators.runbooks.reassignment import ReassignmentRunbook, reassignment_params, reassignment_runbook
from operators.runbook_dag import zk_conn_param

DAG_ID = "rebalance"

DOC_MD = runbook_guide("rebalance")

PARAMS = {
    "zk_conn_id": zk_conn_param(),
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
    **reassignment_params(),
}

dag = reassignment_runbook(ReassignmentRunbook(
    dag_id=DAG_ID,
    description="Even out replicas, bytes and preferred leaders across brokers under a move budget",
    params=PARAMS, doc_md=DOC_MD,
    plan=lambda args: RebalancePlanOperator(
        max_replicas_moved="{{ params.max_replicas_moved }}", max_bytes_moved="{{ params.max_bytes_moved }}",
        target_replica_spread="{{ params.target_replica_spread }}",
        target_bytes_spread_pct="{{ params.target_bytes_spread_pct }}",
        target_leader_spread="{{ params.target_leader_spread }}", **args),
    approval_title="Rebalance (budget: {{ params.max_replicas_moved if params.max_replicas_moved is not none "
                   "else 'any' }} replicas, {{ params.max_bytes_moved if params.max_bytes_moved is not none "
                   "else 'any' }} bytes)",
))
