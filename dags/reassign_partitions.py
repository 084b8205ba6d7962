"""reassign_partitions: run a user's reassignment JSON with every safety of the runbooks.

One instance of the skeleton in ``operators/reassignment/runbook.py``: this file says only what
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

from operators.plan.topic_ops import ReassignPartitionsPlanOperator
from operators.reassignment.runbook import ReassignmentRunbook, reassignment_params, reassignment_runbook
from operators.runbook_dag import zk_conn_param

DAG_ID = "reassign_partitions"

DOC_MD = """
# Run a reassignment JSON (Kafka in ZooKeeper mode)

**When to use**: you have the JSON `kafka-reassign-partitions --execute` takes (written by hand,
by another tool, or by `--generate`) and want it run the way the runbooks run: checked, approved,
throttled, in waves, verified, with throttles cleaned up whatever fails.

**Checked before anything is written**, with Kafka 2.4's own rules, against the live cluster:
the JSON parses (version 1, a non-empty `partitions` list of topic/partition/replicas), no
partition listed twice, no replica list empty or with a duplicate broker, every partition exists,
no topic being deleted, every broker registered, `log_dirs` only `"any"` (placing replicas on log
directories needs the AdminClient; Kafka 2.4 refuses it on the ZooKeeper path). Partitions whose
replica count changes are allowed and listed in the report. Entries equal to the current
assignment are dropped (noted).

**Unlike the shell tool**: the JSON is split into waves (at most `max_moves_per_broker` moves per
broker at a time) instead of one big reassignment, each throttled and waited on; the throttles
are removed at the end and pre-existing ones restored; the report shows the movement per broker.

**Steps**
1. `snapshot`; `plan` (the checks above, then Spark packs the waves); `render_plan_report`.
2. `approve` (Approve/Reject, by another person than the one who triggered; only the
   maintenance-windows policy skips it, for scheduled runs; `dry_run=true` writes nothing).
3. `guards`; `set_throttles`; `execute_waves`; `final_verify`; `remove_throttles` (always);
   `elect_preferred_leaders`; `final_report`; `notify`.

**Roll back** with the `rollback` runbook (it restores what this run recorded in `plan/rollback.json`).

Run folder: `<run_root>/reassign_partitions/<run id>/` (the JSON as given is kept as
`reassignment.json`). Guide: docs/runbooks/reassign_partitions.md.
"""

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
