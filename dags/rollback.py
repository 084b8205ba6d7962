"""rollback: undo an earlier data-moving run — restore what it recorded before its first write.

One instance of the skeleton in ``operators/runbooks/reassignment.py``: this file says only what
differs — its Params (``from_run`` or ``rollback_json``) and its plan (``--op rollback``,
``planning/kernels/rollback.py``).

Failure: the skeleton's — a failed step stops those after it; throttles removed, report and notice still sent.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.plan.rollback import RollbackPlanOperator
from operators.runbooks.reassignment import ReassignmentRunbook, reassignment_runbook

PARAMS = {
    "from_run": Param(None, type=["null", "string"],
                      description="The run folder to undo: its path, or <dag_id>/<run id> under run_root, of a decommission, "
                                  "add_brokers, rebalance, change_replication_factor, move_topics or "
                                  "reassign_partitions run (its plan/rollback.json is restored)"),
    "rollback_json": Param(None, type=["null", "string"],
                           description="Instead of from_run: an assignment to restore, in Kafka's reassignment "
                                       "JSON format ({\"version\":1,\"partitions\":[...]})"),
}

dag = reassignment_runbook(ReassignmentRunbook(
    dag_id="rollback",
    description="Undo an earlier run: restore the assignment it recorded, where nobody changed it since",
    params=PARAMS,
    plan=lambda args: RollbackPlanOperator(from_run="{{ params.from_run }}", rollback_json="{{ params.rollback_json }}",
                                           **args),
    approval_title="Roll back {{ params.from_run or 'an assignment JSON' }}",
    # the brokers the undone run recorded as retiring are released when the rollback is approved
    approve_args={"release_retired_by": "{{ (ti.xcom_pull(task_ids='plan') or {}).get('from_run') }}"},
))
