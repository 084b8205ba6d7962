"""change_replication_factor: raise or lower the replication factor of chosen topics (修改副本因子).

One instance of the skeleton in ``operators/runbooks/reassignment.py``: this file says only what
differs — its Params (``topics``, ``replication_factor``) and its plan (``--op change-rf``,
``planning/kernels/replication.py``). Steps (task ids): snapshot → plan → render_plan_report →
approve → guards → set_throttles (setup) → execute_waves → final_verify → remove_throttles
(teardown) → elect_preferred_leaders → final_report → notify.

Failure: any step that fails stops the steps after it; the throttles are still removed (teardown),
the report and the notification still run, and the notify step fails the run.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.guides import runbook_guide
from operators.plan.topic_ops import ChangeReplicationFactorPlanOperator
from operators.runbooks.reassignment import ReassignmentRunbook, reassignment_params, reassignment_runbook
from operators.runbook_dag import zk_conn_param

DAG_ID = "change_replication_factor"

DOC_MD = runbook_guide("change_replication_factor")

PARAMS = {
    "zk_conn_id": zk_conn_param(),
    "topics": Param([], type="array", items={"type": "string"}, minItems=1,
                    description="Topics whose replication factor changes, one per line (a JSON list through the REST API)"),
    "replication_factor": Param(3, type="integer", minimum=1, maximum=32767,
                                description="The new replication factor of every partition of those topics "
                                            "(at most the number of registered brokers)"),
    **reassignment_params(),
}

dag = reassignment_runbook(ReassignmentRunbook(
    dag_id=DAG_ID,
    description="Raise or lower the replication factor of topics, rack-aware, in throttled approved waves",
    params=PARAMS, doc_md=DOC_MD,
    plan=lambda args: ChangeReplicationFactorPlanOperator(topics="{{ params.topics }}",
                                                          replication_factor="{{ params.replication_factor }}",
                                                          **args),
    approval_title="Change RF of {{ params.topics | join(', ') }} to {{ params.replication_factor }}",
))
