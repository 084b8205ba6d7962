"""change_replication_factor: raise or lower the replication factor of chosen topics (修改副本因子).

One instance of the skeleton in ``operators/runbooks/reassignment.py``: this file says only what
differs — its Params (``topics``, ``replication_factor``) and its plan (``--op change-rf``,
``planning/kernels/replication.py``).

Failure: the skeleton's — a failed step stops those after it; throttles removed, report and notice still sent.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.plan.topic_ops import ChangeReplicationFactorPlanOperator
from operators.runbooks.reassignment import ReassignmentRunbook, reassignment_runbook
from operators.runbook_dag import topics_param

PARAMS = {
    "topics": topics_param("Topics whose replication factor changes"),
    "replication_factor": Param(3, type="integer", minimum=1, maximum=32767,
                                description="The new replication factor of every partition of those topics "
                                            "(at most the number of registered brokers)"),
}

dag = reassignment_runbook(ReassignmentRunbook(
    dag_id="change_replication_factor",
    description="Raise or lower the replication factor of topics, rack-aware, in throttled approved waves",
    params=PARAMS,
    plan=lambda args: ChangeReplicationFactorPlanOperator(topics="{{ params.topics }}",
                                                          replication_factor="{{ params.replication_factor }}",
                                                          **args),
    approval_title="Change RF of {{ params.topics | join(', ') }} to {{ params.replication_factor }}",
))
