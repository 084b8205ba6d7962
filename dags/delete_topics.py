"""delete_topics: delete topics chosen by list or regex, previewed, approved, in waited-on batches.

Built by the batch-runbook factory (:mod:`operators.batches.runbook`: approval at the write, four
eyes, maintenance window before each batch, notifications, dry run, audit). Steps (task ids):
snapshot → select → preview_report → approve → delete_batches → verify_deleted → final_report →
notify. Inputs are Params with a JSON schema; artifacts go to the run folder
``<run_root>/delete_topics/<run id>/`` (snapshot, plan/plan.json = the selection and batches,
approval.json, deletion_progress.json = batch progress, audit.jsonl = every marker written, reports).
The SRE guide (the DAG's ``doc_md``) is ``docs/runbooks/delete_topics.md``.

Failure: a refused topic fails ``select`` before anything is written; a batch not deleted in time
fails ``delete_batches`` with the likely cause; the final report still runs and then fails the run.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.batches.deletion import DeleteTopicBatchesOperator, DeletionReportOperator, SelectTopicsOperator
from operators.batches.runbook import BatchRunbook, batch_runbook
from operators.deferral import DEFERRING_RETRIES
from operators.guides import runbook_guide
from operators.runbook_dag import run_root_param, zk_conn_param
from operators.sensors.deletion import TopicsDeletedSensor

DAG_ID = "delete_topics"

DOC_MD = runbook_guide(DAG_ID)

PARAMS = {
    "zk_conn_id": zk_conn_param(),
    "topics": Param([], type=["null", "array"], items={"type": "string", "minLength": 1}, uniqueItems=True,
                    description="Topic names to delete, one per line (and/or topic_regex)"),
    "topic_regex": Param(None, type=["null", "string"],
                         description="Regular expression matched against the whole topic name, e.g. 'tmp-.*' (read as "
                                     "kafka-topics --topic reads it: a comma means |); "
                                     "every live topic that matches is selected (shown in the preview)"),
    "batch_size": Param(10, type="integer", minimum=1,
                        description="Topics marked for deletion per batch; the next batch starts when this one is gone"),
    "pause_between_batches_s": Param(0, type="number", minimum=0,
                                     description="Seconds to wait after a batch is deleted before marking the next"),
    "max_batch_bytes": Param(0, type="integer", minimum=0,
                             description="Cap on log data (bytes, size x replicas) deleted per batch; needs sizes_file. "
                                         "0: no cap"),
    "sizes_file": Param(None, type=["null", "string"],
                        description="Optional path to `kafka-log-dirs.sh --describe` output (for sizes and "
                                    "max_batch_bytes)"),
    "allow_internal": Param(False, type="boolean",
                            description="Override: allow deleting __consumer_offsets / __transaction_state "
                                        "(loses consumer offsets or transactions)"),
    "dry_run": Param(False, type="boolean",
                     description="Preview only: select, report and plan the marker writes (audit log); write nothing"),
    "batch_timeout_s": Param(600, type="integer", minimum=1,
                             description="Fail a batch whose topics are not all deleted this many seconds after "
                                         "its markers were written"),
    "poll_interval_s": Param(1.0, type="number", exclusiveMinimum=0,
                             description="Seconds between checks while a batch is being deleted"),
    "run_root": run_root_param(),
}

dag = batch_runbook(BatchRunbook(
    dag_id=DAG_ID, description="Delete topics by list or regex: preview, approval, batches waited on until gone",
    params=PARAMS, doc_md=DOC_MD,
    snapshot_args={"sizes_file": "{{ params.sizes_file }}"},
    plan=lambda args: SelectTopicsOperator(
        task_id="select", topics="{{ params.topics }}", topic_regex="{{ params.topic_regex }}",
        allow_internal="{{ params.allow_internal }}", batch_size="{{ params.batch_size }}",
        max_batch_bytes="{{ params.max_batch_bytes }}", **args),
    report=lambda kind, args: DeletionReportOperator(kind=kind, **args),
    approval_subject="Delete {{ ti.xcom_pull(task_ids='select')['topics'] }} topic(s): approve plan "
                     "{{ ti.xcom_pull(task_ids='preview_report')['plan_hash'][:12] }}",
    execute=lambda args: DeleteTopicBatchesOperator(
        task_id="delete_batches", allow_internal="{{ params.allow_internal }}",
        batch_timeout_s="{{ params.batch_timeout_s }}", pause_between_batches_s="{{ params.pause_between_batches_s }}",
        poll_interval_s="{{ params.poll_interval_s }}", **args),
    checks=[lambda args: TopicsDeletedSensor(
        task_id="verify_deleted", zk_conn_id="{{ params.zk_conn_id }}",
        topics="{{ ti.xcom_pull(task_ids='delete_batches')['selected'] if not params.dry_run else [] }}",
        timeout_s="{{ params.batch_timeout_s }}", poll_interval_s="{{ params.poll_interval_s }}",
        **DEFERRING_RETRIES)],
))
