"""move_topics: move chosen topics onto a set of brokers, moving the least.

One instance of the skeleton in ``operators/runbooks/reassignment.py``: this file says only what
differs — its Params (``topics``, ``brokers``) and its plan (``--op move-topics``,
``planning/kernels/add_and_move.plan_move_topics``).

Failure: the skeleton's — a failed step stops those after it; throttles removed, report and notice still sent.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.plan.topic_ops import MoveTopicsPlanOperator
from operators.runbooks.reassignment import ReassignmentRunbook, reassignment_runbook
from operators.runbook_dag import broker_ids_param, ids_text, topics_param

PARAMS = {
    "topics": topics_param("Topics to move"),
    "brokers": broker_ids_param("The registered brokers these topics must end on", "4, 5, 6"),
}

dag = reassignment_runbook(ReassignmentRunbook(
    dag_id="move_topics",
    description="Move topics onto a set of brokers with the fewest moves, in throttled approved waves",
    params=PARAMS,
    plan=lambda args: MoveTopicsPlanOperator(topics="{{ params.topics }}", brokers="{{ params.brokers }}", **args),
    approval_title="Move {{ params.topics | join(', ') }} onto brokers " + ids_text("params.brokers"),
))
