"""move_topics: move chosen topics onto a set of brokers, moving the least.

One instance of the skeleton in ``operators/runbooks/reassignment.py``: this file says only what
differs — its Params (``topics``, ``brokers``) and its plan (``--op move-topics``,
``planning/kernels/add_and_move.plan_move_topics``). Steps (task ids): snapshot → plan →
render_plan_report → approve → guards → set_throttles (setup) → execute_waves → final_verify →
remove_throttles (teardown) → elect_preferred_leaders → final_report → notify.

Failure: any step that fails stops the steps after it; the throttles are still removed (teardown),
the report and the notification still run, and the notify step fails the run.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.guides import runbook_guide
from operators.plan.topic_ops import MoveTopicsPlanOperator
from operators.runbooks.reassignment import ReassignmentRunbook, reassignment_params, reassignment_runbook
from operators.runbook_dag import broker_ids_param, ids_text, zk_conn_param

DAG_ID = "move_topics"

DOC_MD = runbook_guide("move_topics")

PARAMS = {
    "zk_conn_id": zk_conn_param(),
    "topics": Param([], type="array", items={"type": "string"}, minItems=1,
                    description="Topics to move, one per line (a JSON list through the REST API)"),
    "brokers": broker_ids_param("The registered brokers these topics must end on", "4, 5, 6"),
    **reassignment_params(),
}

dag = reassignment_runbook(ReassignmentRunbook(
    dag_id=DAG_ID,
    description="Move topics onto a set of brokers with the fewest moves, in throttled approved waves",
    params=PARAMS, doc_md=DOC_MD,
    plan=lambda args: MoveTopicsPlanOperator(topics="{{ params.topics }}", brokers="{{ params.brokers }}", **args),
    approval_title="Move {{ params.topics | join(', ') }} onto brokers " + ids_text("params.brokers"),
))
