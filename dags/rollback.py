"""rollback: undo an earlier data-moving run — restore what it recorded before its first write.

One instance of the skeleton in ``operators/runbooks/reassignment.py``: this file says only what
differs — its Params (``from_run`` or ``rollback_json``) and its plan (``--op rollback``,
``planning/kernels/rollback.py``). Steps (task ids): snapshot → plan → render_plan_report →
approve → guards → set_throttles (setup) → execute_waves → final_verify → remove_throttles
(teardown) → elect_preferred_leaders → final_report → notify.

Failure: any step that fails stops the steps after it; the throttles are still removed (teardown),
the report and the notification still run, and the notify step fails the run.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.guides import runbook_guide
from operators.plan.rollback import RollbackPlanOperator
from operators.runbooks.reassignment import ReassignmentRunbook, reassignment_params, reassignment_runbook
from operators.runbook_dag import zk_conn_param

DAG_ID = "rollback"

DOC_MD = runbook_guide("rollback")

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
    # the brokers the undone run recorded as retiring are released when the rollback is approved
    approve_args={"release_retired_by": "{{ (ti.xcom_pull(task_ids='plan') or {}).get('from_run') }}"},
))
