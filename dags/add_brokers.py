"""add_brokers: move a balanced share of replicas and preferred leaderships onto new brokers.

One instance of the skeleton in ``operators/reassignment/runbook.py``: this file says only what
differs — its Params (``new_brokers``) and its plan (``--op add-brokers``: least movement onto the
new brokers until replica counts are within one, bytes balanced when sizes are given, racks
respected). Steps (task ids): snapshot → plan → render_plan_report → approve → guards →
set_throttles (setup) → execute_waves → final_verify → remove_throttles (teardown) →
elect_preferred_leaders → final_report → notify. See ``doc_md`` below for the SRE guide.

Failure: any step that fails stops the steps after it; the throttles are still removed (teardown),
the report and the notification still run, and the notify step fails the run.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.plan.ops import AddBrokersPlanOperator
from operators.reassignment.runbook import ReassignmentRunbook, reassignment_params, reassignment_runbook
from operators.runbook_dag import broker_ids_param, ids_text, zk_conn_param

DAG_ID = "add_brokers"

DOC_MD = """
# Add brokers (Kafka in ZooKeeper mode)

**When to use**: new brokers have joined the cluster (registered, empty) and should carry their
share. Kafka never moves existing replicas onto a new broker by itself: only new topics and
partitions land there until someone reassigns.

**Before you start**: start the new brokers with their `broker.rack` set and check they are
registered (`/brokers/ids/<id>`). The plan refuses ids that are not registered.

**Steps**
1. `snapshot` reads the cluster; `plan` (Spark) moves replicas from the most loaded old brokers
   onto the new ones, one at a time, until every broker is within one replica of the others
   (where racks allow), choosing replica sizes so that bytes even out too when `sizes_file` is
   given, and hands the new brokers their share of preferred leaderships. Nothing else moves:
   the number of moves is the least that reaches that balance. `render_plan_report` shows
   replicas, leaders and bytes per broker before and after.
2. `approve` waits for a human in *Required actions* (Approve/Reject), showing the plan hash.
   Another person approves (four eyes, expires); only a windows-file policy skips it, for
   scheduled runs (docs/maintenance-windows.md); `dry_run=true` writes nothing.
3. `guards`: no other reassignment running, the plan still matches the cluster ("plan is stale,
   re-plan" otherwise), every destination broker registered, plan hash = approved hash.
4. `set_throttles` caps replication traffic; `execute_waves` submits one wave at a time and waits
   (deferred) for the controller; `final_verify`; `remove_throttles` (always runs, restores
   throttles that existed before); `elect_preferred_leaders` (the new brokers take their share of
   leadership); `final_report`; `notify`.

**What to watch**: the `execute_waves` log prints per poll: partitions done/total, bytes
remaining, throughput, ETA. New brokers fill at the throttle rate: a new broker receiving
100 GiB at 50 MiB/s needs about 35 minutes.

**How to stop safely**: mark `execute_waves` failed. The wave already submitted keeps running in
Kafka (ZooKeeper-mode reassignments cannot be paused); the teardown keeps our throttles until it
finishes, then removes them. Clearing `execute_waves` later resumes.

**How to roll back**: `plan/rollback.json` in the run folder holds the original assignment
(Kafka's format): run the `rollback` runbook, or `kafka-runbook reassign --execute` with it.

Run folder: `<run_root>/add_brokers/<run id>/` — snapshot, plan, approval.json, audit.jsonl,
guards.json, throttles.json, waves.json, verify.json, reports.
"""

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
