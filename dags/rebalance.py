"""rebalance: even out replica counts, bytes and preferred leaders under a move budget.

One instance of the skeleton in ``operators/reassignment/runbook.py``: this file says only what
differs — its Params (the budget and the target spreads) and its plan (``--op rebalance``,
``spark_jobs/kernels/budget_rebalance.py``). Steps (task ids): snapshot → plan →
render_plan_report → approve → guards → set_throttles (setup) → execute_waves → final_verify →
remove_throttles (teardown) → elect_preferred_leaders → final_report → notify.

Failure: any step that fails stops the steps after it; the throttles are still removed (teardown),
the report and the notification still run, and the notify step fails the run.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.plan.ops import RebalancePlanOperator
from operators.reassignment.runbook import ReassignmentRunbook, reassignment_params, reassignment_runbook
from operators.runbook_dag import zk_conn_param

DAG_ID = "rebalance"

DOC_MD = """
# Rebalance (Kafka in ZooKeeper mode)

**When to use**: brokers carry uneven load — some hold more replicas, bytes or preferred
leaderships than others (after topic growth, broker replacements, hand-made moves) — and you
want them even *without* reshuffling the cluster. Kafka's `--generate` proposes a new place for
every partition; this runbook moves the least that reaches the target spread, and never more than
the budget you give.

**The budget**: `max_replicas_moved` (new replicas created) and/or `max_bytes_moved` (bytes
copied; needs `sizes_file`). Null means no cap. The plan takes one move at a time, always the one
that most narrows the spread still off its target (replica counts first, then bytes), never one
that widens any spread (replicas, bytes or preferred leaders), and stops when the targets are
met, the budget is spent, or nothing helps. Preferred leaders are then evened out by re-ordering
replica lists, which copies no data and costs no budget. With a replica budget that binds, exactly
that many replicas move.

**The targets**: `target_replica_spread` (max − min replicas per broker, default 1),
`target_bytes_spread_pct` ((max − min) / mean bytes per broker, default 10 %; only with sizes),
`target_leader_spread` (default 1). With rack-aware placement each rack holds its share of every
partition, so across racks of unequal size a spread of 1 may be out of reach: the report says so.

**Steps**
1. `snapshot`; `plan` (Spark); `render_plan_report` shows replicas, leaders and bytes per broker
   before and after, the spreads before → after, and what the budget bought ("budget 200
   replicas: used 200, replica spread 14 → 3, target not reached (replica budget spent)").
2. `approve` (Approve/Reject in *Required actions*, by another person than the one who triggered;
   only a windows-file policy skips it, for scheduled runs; `dry_run=true` writes nothing).
3. `guards`: no reassignment running, plan not stale, destinations registered, hash approved.
4. `set_throttles`; `execute_waves` (deferred, resumable); `final_verify`; `remove_throttles`
   (always; restores the throttles that were there before); `elect_preferred_leaders` (makes the
   re-ordered preferred leaders lead); `final_report`; `notify`.

**How to stop safely**: mark `execute_waves` failed; the running wave finishes in Kafka with its
throttles kept until it ends. Clearing `execute_waves` resumes. **Roll back** with the
`rollback` runbook or `kafka-runbook reassign --execute` and `plan/rollback.json`.

**Running it again** continues where the budget stopped: each run plans from the live cluster.

Run folder: `<run_root>/rebalance/<run id>/` — snapshot, plan, approval.json, audit.jsonl,
guards.json, throttles.json, waves.json, verify.json, reports.
"""

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
