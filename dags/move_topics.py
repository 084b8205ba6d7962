"""move_topics: move chosen topics onto a set of brokers, moving the least.

One instance of the skeleton in ``operators/reassignment/runbook.py``: this file says only what
differs — its Params (``topics``, ``brokers``) and its plan (``--op move-topics``,
``spark_jobs/kernels/rebalance.plan_move_topics``). Steps (task ids): snapshot → plan →
render_plan_report → approve → guards → set_throttles (setup) → execute_waves → final_verify →
remove_throttles (teardown) → elect_preferred_leaders → final_report → notify.

Failure: any step that fails stops the steps after it; the throttles are still removed (teardown),
the report and the notification still run, and the notify step fails the run.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.plan.topic_ops import MoveTopicsPlanOperator
from operators.reassignment.runbook import ReassignmentRunbook, reassignment_params, reassignment_runbook
from operators.runbook_dag import broker_ids_param, ids_text, zk_conn_param

DAG_ID = "move_topics"

DOC_MD = """
# Move topics onto a set of brokers (Kafka in ZooKeeper mode)

**When to use**: some topics must live on dedicated brokers (a noisy tenant, a compliance
boundary, new hardware for hot topics) — Kafka's `--generate --topics-to-move-json-file
--broker-list` does this but reshuffles every replica of those topics, even the ones already on
the target brokers.

**What it does**: every partition of `topics` ends with all replicas on `brokers`; replicas
already there stay where they are and keep their position, so only the replicas outside the set
move (the least possible), each to the least-loaded target broker in a rack the partition does not
use yet. Preferred leaders that had to move are spread evenly over the set.

**Refused before anything is written**: an unknown topic, a broker of the set that is not
registered, a set smaller than a partition's replica count, a partition already being reassigned.

**Steps**
1. `snapshot`; `plan` (Spark); `render_plan_report` (replicas per broker before/after).
2. `approve` (Approve/Reject, by another person than the one who triggered; only the
   maintenance-windows policy skips it, for scheduled runs; `dry_run=true` writes nothing).
3. `guards` (destinations registered, plan not stale); `set_throttles`; `execute_waves`;
   `final_verify`; `remove_throttles` (always); `elect_preferred_leaders`; `final_report`; `notify`.

**How to stop safely**: mark `execute_waves` failed; the running wave finishes in Kafka with its
throttles kept until it ends. **Roll back** with the `rollback` runbook or `plan/rollback.json`.

Run folder: `<run_root>/move_topics/<run id>/`. Guide: docs/runbooks/move_topics.md.
"""

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
