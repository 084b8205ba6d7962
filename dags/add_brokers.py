"""add_brokers: move a balanced share of replicas and preferred leaderships onto new brokers.

One instance of the skeleton in ``operators/runbooks/reassignment.py``: this file says only what
differs — its Params (``new_brokers``) and its plan (``--op add-brokers``: least movement onto the
new brokers until replica counts are within one, bytes balanced when sizes are given, racks
respected). Steps (task ids): snapshot → plan → render_plan_report → approve → guards →
set_throttles (setup) → execute_waves → final_verify → remove_throttles (teardown) →
elect_preferred_leaders → final_report → notify. The SRE guide (the DAG's ``doc_md``) is
``docs/runbooks/add_brokers.md``.

Failure: any step that fails stops the steps after it; the throttles are still removed (teardown),
the report and the notification still run, and the notify step fails the run.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.guides import runbook_guide
from operators.plan.balance_ops import AddBrokersPlanOperator
from operators.runbooks.reassignment import ReassignmentRunbook, reassignment_params, reassignment_runbook
from operators.runbook_dag import broker_ids_param, ids_text, zk_conn_param

DAG_ID = "add_brokers"

DOC_MD = runbook_guide("add_brokers")

PARAMS = {
    "zk_conn_id": zk_conn_param(),
    "new_brokers": broker_ids_param("Ids of the new, registered brokers that should take their share", "7, 8"),
    **reassignment_params(),
}

dag = reassignment_runbook(ReassignmentRunbook(
    dag_id=DAG_ID,
    description="Move a balanced share of replicas and leadership onto new brokers, in throttled, approved waves",
    params=PARAMS, doc_md=DOC_MD,
    plan=lambda args: AddBrokersPlanOperator(new_brokers="{{ params.new_brokers }}", **args),
    approval_title="Add brokers " + ids_text("params.new_brokers"),
))
