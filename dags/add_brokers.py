"""add_brokers: move a balanced share of replicas and preferred leaderships onto new brokers.

One instance of the skeleton in ``operators/runbooks/reassignment.py``: this file says only what
differs — its Params (``new_brokers``) and its plan (``--op add-brokers``: least movement onto the
new brokers until replica counts are within one, bytes balanced when sizes are given, racks
respected). The SRE guide (the DAG's ``doc_md``) is ``docs/runbooks/add_brokers.md``.

Failure: the skeleton's — a failed step stops those after it; throttles removed, report and notice still sent.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.plan.balance_ops import AddBrokersPlanOperator
from operators.runbooks.reassignment import ReassignmentRunbook, reassignment_runbook
from operators.runbook_dag import broker_ids_param, ids_text

PARAMS = {
    "new_brokers": broker_ids_param("Ids of the new, registered brokers that should take their share", "7, 8"),
}

dag = reassignment_runbook(ReassignmentRunbook(
    dag_id="add_brokers",
    description="Move a balanced share of replicas and leadership onto new brokers, in throttled, approved waves",
    params=PARAMS,
    plan=lambda args: AddBrokersPlanOperator(new_brokers="{{ params.new_brokers }}", **args),
    approval_title="Add brokers " + ids_text("params.new_brokers"),
))
