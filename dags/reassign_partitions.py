"""reassign_partitions: run a user's reassignment JSON with every safety of the runbooks.

One instance of the skeleton in ``operators/runbooks/reassignment.py``: this file says only what
differs — its Param (``reassignment_json``, Kafka's format verbatim) and its plan
(``--op reassign-json``: checked against the live cluster, packed into throttled waves). Steps
(task ids): snapshot → plan → render_plan_report → approve → guards → set_throttles (setup) →
execute_waves → final_verify → remove_throttles (teardown) → elect_preferred_leaders →
final_report → notify.

Failure: any step that fails stops the steps after it; the throttles are still removed (teardown),
the report and the notification still run, and the notify step fails the run.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.guides import runbook_guide
from operators.plan.topic_ops import ReassignPartitionsPlanOperator
from operators.runbooks.reassignment import ReassignmentRunbook, reassignment_params, reassignment_runbook
from operators.runbook_dag import zk_conn_param

DAG_ID = "reassign_partitions"

DOC_MD = runbook_guide("reassign_partitions")

PARAMS = {
    "zk_conn_id": zk_conn_param(),
    "reassignment_json": Param("", type="string", minLength=1,
                               description="The reassignment JSON kafka-reassign-partitions --execute takes, "
                                           "verbatim: {\"version\":1,\"partitions\":[{\"topic\":\"t\","
                                           "\"partition\":0,\"replicas\":[1,2,3]}]}"),
    **reassignment_params(),
}

dag = reassignment_runbook(ReassignmentRunbook(
    dag_id=DAG_ID,
    description="Run a user's reassignment JSON (Kafka's format) checked, approved, throttled and in waves",
    params=PARAMS, doc_md=DOC_MD,
    plan=lambda args: ReassignPartitionsPlanOperator(reassignment_json="{{ params.reassignment_json }}", **args),
    approval_title="Reassign partitions from a JSON",
))
