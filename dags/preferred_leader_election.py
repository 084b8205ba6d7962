"""preferred_leader_election: give leadership back to preferred replicas, in batches under the znode limit.

Built by the batch-runbook factory (:mod:`operators.batches.runbook`: approval at the write, four
eyes, maintenance window before each batch, notifications, dry run, audit). Steps (task ids):
snapshot → plan → preview_report → approve → elect_batches → final_report → notify.
Inputs are Params with a JSON schema; artifacts go to ``<run_root>/preferred_leader_election/<run id>/``
(snapshot, plan/ with the batches and ``election_plan.json``, approval.json, election_progress.json,
audit.jsonl, reports). The SRE guide (the DAG's ``doc_md``) is ``docs/runbooks/preferred_leader_election.md``.
``cluster_health`` may trigger this DAG inside a maintenance window; the run still asks a human.

Failure: bad inputs fail ``plan`` before any write; a node not consumed in time fails
``elect_batches``; the final report still runs, then fails the run.
"""

from __future__ import annotations

from airflow.sdk import Param

from kafka_zk.limits import ADMIN_BATCH_BYTES, MAX_ADMIN_BATCH_BYTES
from operators.batches.election import ElectBatchesOperator, ElectionPlanOperator, ElectionReportOperator
from operators.batches.runbook import BatchRunbook, batch_runbook
from operators.guides import runbook_guide
from operators.runbook_dag import run_root_param, zk_conn_param

DAG_ID = "preferred_leader_election"

DOC_MD = runbook_guide(DAG_ID)

PARAMS = {
    "zk_conn_id": zk_conn_param(),
    "topics": Param([], type=["null", "array"], items={"type": "string", "minLength": 1}, uniqueItems=True,
                    description="Only these topics' partitions (empty with no regex and no file: every partition)"),
    "topic_regex": Param(None, type=["null", "string"],
                         description="Only topics whose whole name matches this regular expression, e.g. "
                                     "'orders-.*' (a comma means |, as in kafka-topics --topic)"),
    "path_to_json_file": Param(None, type=["null", "string"],
                               description="Optional path to a JSON file in kafka-preferred-replica-election.sh "
                                           "--path-to-json-file format: "
                                           "{\"partitions\":[{\"topic\":\"t\",\"partition\":0}]}"),
    "max_batch_partitions": Param(1000, type="integer", minimum=1,
                                  description="At most this many partitions per election batch"),
    "max_batch_bytes": Param(ADMIN_BATCH_BYTES, type="integer", minimum=64, maximum=MAX_ADMIN_BATCH_BYTES,
                             description="At most this many bytes per /admin/preferred_replica_election payload "
                                         "(ZooKeeper's limit is 1 MiB; default 512 KiB)"),
    "pause_between_batches_s": Param(0, type="number", minimum=0,
                                     description="Seconds to wait after a batch is consumed before writing the next"),
    "batch_timeout_s": Param(120, type="integer", minimum=1,
                             description="Fail when the controller has not consumed a batch's node after this many "
                                         "seconds"),
    "dry_run": Param(False, type="boolean",
                     description="Plan and report; only plan the election writes (audit log); write nothing"),
    "poll_interval_s": Param(0.5, type="number", exclusiveMinimum=0,
                             description="Seconds between checks while waiting for the controller"),
    "run_root": run_root_param(),
}

dag = batch_runbook(BatchRunbook(
    dag_id=DAG_ID, description="Move leadership back to preferred replicas in approved batches under the znode limit",
    params=PARAMS, doc_md=DOC_MD,
    plan=lambda args: ElectionPlanOperator(
        task_id="plan", topics="{{ params.topics }}", topic_regex="{{ params.topic_regex }}",
        path_to_json_file="{{ params.path_to_json_file }}", max_batch_bytes="{{ params.max_batch_bytes }}",
        max_batch_partitions="{{ params.max_batch_partitions }}", **args),
    report=lambda kind, args: ElectionReportOperator(kind=kind, **args),
    approval_subject="Elect preferred leaders for {{ ti.xcom_pull(task_ids='plan')['candidates'] }} partition(s): "
                     "approve plan {{ ti.xcom_pull(task_ids='plan')['plan_hash'][:12] }}",
    execute=lambda args: ElectBatchesOperator(
        task_id="elect_batches", batch_timeout_s="{{ params.batch_timeout_s }}",
        pause_between_batches_s="{{ params.pause_between_batches_s }}", poll_interval_s="{{ params.poll_interval_s }}",
        **args),
))
