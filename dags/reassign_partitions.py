"""reassign_partitions: run a user's reassignment JSON with every safety of the runbooks.

One instance of the skeleton in ``operators/runbooks/reassignment.py``: this file says only what
differs — its Param (``reassignment_json``, Kafka's format verbatim) and its plan
(``--op reassign-json``: checked against the live cluster, packed into throttled waves).

Failure: the skeleton's — a failed step stops those after it; throttles removed, report and notice still sent.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.plan.topic_ops import ReassignPartitionsPlanOperator
from operators.runbooks.reassignment import ReassignmentRunbook, reassignment_runbook

PARAMS = {
    "reassignment_json": Param("", type="string", minLength=1,
                               description="The reassignment JSON kafka-reassign-partitions --execute takes, "
                                           "verbatim: {\"version\":1,\"partitions\":[{\"topic\":\"t\","
                                           "\"partition\":0,\"replicas\":[1,2,3]}]}"),
}

dag = reassignment_runbook(ReassignmentRunbook(
    dag_id="reassign_partitions",
    description="Run a user's reassignment JSON (Kafka's format) checked, approved, throttled and in waves",
    params=PARAMS,
    plan=lambda args: ReassignPartitionsPlanOperator(reassignment_json="{{ params.reassignment_json }}", **args),
    approval_title="Reassign partitions from a JSON",
))
