"""change_replication_factor: raise or lower the replication factor of chosen topics (修改副本因子).

One instance of the skeleton in ``operators/reassignment/runbook.py``: this file says only what
differs — its Params (``topics``, ``replication_factor``) and its plan (``--op change-rf``,
``spark_jobs/kernels/replication.py``). Steps (task ids): snapshot → plan → render_plan_report →
approve → guards → set_throttles (setup) → execute_waves → final_verify → remove_throttles
(teardown) → elect_preferred_leaders → final_report → notify.

Failure: any step that fails stops the steps after it; the throttles are still removed (teardown),
the report and the notification still run, and the notify step fails the run.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.plan.topic_ops import ChangeReplicationFactorPlanOperator
from operators.reassignment.runbook import ReassignmentRunbook, reassignment_params, reassignment_runbook
from operators.runbook_dag import zk_conn_param

DAG_ID = "change_replication_factor"

DOC_MD = """
# Change the replication factor (Kafka in ZooKeeper mode)

**When to use**: a topic was created with too few replicas (RF 2 → 3 before a broker maintenance,
or after an incident showed one copy is not enough), or with more than it needs (RF 3 → 2 to free
disk). Kafka has no command for it; by hand it is a reassignment JSON written for every partition.

**Raising**: each partition keeps its replicas in order (the preferred leader does not change) and
gains new ones at the end, on the least-loaded registered brokers in racks the partition does not
use yet; with `sizes_file` the new replicas' bytes are evened out across brokers of a rack. The
new replicas copy the data under the throttle, in waves.

**Lowering**: replicas are dropped out-of-sync first, then ones sharing a rack, then on the most
loaded brokers — never the current leader, never the last in-sync replica, and the preferred
(first) replica only when nothing else can go, so preferred leaders stay where they are. No data
is copied. Refused when a topic's `min.insync.replicas` (its override, else the cluster default)
would exceed the new RF — producers with `acks=all` would be refused on every write: lower it first.

**Refused before anything is written**: an RF above the number of registered brokers, an unknown
topic, a partition already being reassigned.

**Steps**
1. `snapshot`; `plan` (Spark); `render_plan_report` (replicas per broker before/after).
2. `approve` (Approve/Reject in *Required actions*, by another person than the one who triggered;
   only the maintenance-windows policy skips it, for scheduled runs; `dry_run=true` writes nothing).
3. `guards`; `set_throttles`; `execute_waves` (deferred, resumable, inside maintenance windows);
   `final_verify` (every ISR full); `remove_throttles` (always); `elect_preferred_leaders`;
   `final_report`; `notify`.

**How to stop safely**: mark `execute_waves` failed; the running wave finishes in Kafka with its
throttles kept until it ends. **Roll back** with the `rollback` runbook or `plan/rollback.json`.

Run folder: `<run_root>/change_replication_factor/<run id>/`. Guide: docs/runbooks/change_replication_factor.md.
"""

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
