"""rollback: undo an earlier data-moving run — restore what it recorded before its first write.

One instance of the skeleton in ``operators/reassignment/runbook.py``: this file says only what
differs — its Params (``from_run`` or ``rollback_json``) and its plan (``--op rollback``,
``spark_jobs/kernels/rollback.py``). Steps (task ids): snapshot → plan → render_plan_report →
approve → guards → set_throttles (setup) → execute_waves → final_verify → remove_throttles
(teardown) → elect_preferred_leaders → final_report → notify.

Failure: any step that fails stops the steps after it; the throttles are still removed (teardown),
the report and the notification still run, and the notify step fails the run.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.plan.rollback import RollbackPlanOperator
from operators.reassignment.runbook import ReassignmentRunbook, reassignment_params, reassignment_runbook
from operators.runbook_dag import zk_conn_param

DAG_ID = "rollback"

DOC_MD = """
# Roll back a run (Kafka in ZooKeeper mode)

**When to use**: a decommission, add-brokers, rebalance, RF change, topic move or reassignment
run must be undone — it finished and the result is wrong, it failed, or it was stopped (task
marked failed, worker killed) after some waves.

**What it restores**: every data-moving run saves `plan/rollback.json` — the assignment of each
partition it planned to move, as it was — before its first write. This runbook puts back exactly
that, in the recorded order (preferred leaders included), **only for partitions the run changed
and nobody changed since**: a partition still as the run left it (its target, replica order
aside) goes back; one the run never reached is already right; one someone else changed since is
left alone and listed in the report with what it is now, what the run set and what it was.
Or give `rollback_json`: any assignment in Kafka's reassignment format to restore.

**Before you run it**: if the run you undo was killed, its throttles may still be set: clear its
`remove_throttles` task first (it restores the values it recorded). A reassignment still running
is refused by the guards: wait for it.

**Steps**: `snapshot`; `plan` (Spark); `render_plan_report`; `approve` (another person; only the
maintenance-windows policy skips it, for scheduled runs); `guards`; `set_throttles`;
`execute_waves`; `final_verify`; `remove_throttles`; `elect_preferred_leaders`; `final_report`;
`notify`. `dry_run=true` writes nothing.

Run folder: `<run_root>/rollback/<run id>/`. Guide: docs/runbooks/rollback.md.
"""

PARAMS = {
    "zk_conn_id": zk_conn_param(),
    "from_run": Param(None, type=["null", "string"],
                      description="The run folder to undo: its path, or <dag_id>/<run id> under run_root, of a decommission, "
                                  "add_brokers, rebalance, change_replication_factor, move_topics or "
                                  "reassign_partitions run (its plan/rollback.json is restored)"),
    "rollback_json": Param(None, type=["null", "string"],
                           description="Instead of from_run: an assignment to restore, in Kafka's reassignment "
                                       "JSON format ({\"version\":1,\"partitions\":[...]})"),
    **reassignment_params(),
}

dag = reassignment_runbook(ReassignmentRunbook(
    dag_id=DAG_ID,
    description="Undo an earlier run: restore the assignment it recorded, where nobody changed it since",
    params=PARAMS, doc_md=DOC_MD,
    plan=lambda args: RollbackPlanOperator(from_run="{{ params.from_run }}", rollback_json="{{ params.rollback_json }}",
                                           **args),
    approval_title="Roll back {{ params.from_run or 'an assignment JSON' }}",
))
