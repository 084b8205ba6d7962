"""delete_topics: delete topics chosen by list or regex, previewed, approved, in waited-on batches.

Built by the batch-runbook factory (:mod:`operators.batches.runbook`: approval at the write, four
eyes, maintenance window before each batch, notifications, dry run, audit). Steps (task ids):
snapshot → select → preview_report → approve → delete_batches → verify_deleted → final_report →
notify. Inputs are Params with a JSON schema; artifacts go to the run folder
``<run_root>/delete_topics/<run id>/`` (snapshot, plan/plan.json = the selection and batches,
approval.json, deletion_progress.json = batch progress, audit.jsonl = every marker written, reports).
The SRE guide is ``doc_md`` below and ``docs/runbooks/delete_topics.md``.

Failure: a refused topic fails ``select`` before anything is written; a batch not deleted in time
fails ``delete_batches`` with the likely cause; the final report still runs and then fails the run.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.batches.deletion import DeleteTopicBatchesOperator, DeletionReportOperator, SelectTopicsOperator
from operators.batches.runbook import BatchRunbook, batch_runbook
from operators.deferral import DEFERRING_RETRIES
from operators.runbook_dag import run_root_param, zk_conn_param
from operators.sensors.deletion import TopicsDeletedSensor

DAG_ID = "delete_topics"

DOC_MD = """
# Delete topics (Kafka in ZooKeeper mode)

**When to use**: removing abandoned topics by name or by pattern, where a typo must not cost data.
Deletion is for good: the data is removed from every replica.

**Steps**
1. `snapshot` reads the cluster. `select` resolves `topics` and `topic_regex` (the regex must match
   the *whole* name) and **refuses, before any write**, topics that do not exist, internal topics
   (`__consumer_offsets`, `__transaction_state`) unless `allow_internal`, and topics with a partition
   reassignment in progress — each with its reason in the log and the report.
2. `preview_report` writes the list and the batches to the run folder (`plan_report.md/.html`).
3. `approve` waits for a human (Required actions: Approve/Reject) showing the plan hash;
   another person approves (four eyes); only a windows-file policy skips it, for scheduled runs
   (docs/maintenance-windows.md); `dry_run=true` writes nothing at all.
4. `delete_batches`, per batch: the maintenance window first (outside one a manual run waits,
   deferred, and notifies; a batch predicted to overrun the open window waits for the next one;
   `outside_window=true` for an emergency, recorded), then creates `/admin/delete_topics/<topic>` for one batch, then waits (deferred,
   no worker held) until every topic of the batch is gone from `/brokers/topics`,
   `/config/topics` and `/admin/delete_topics`; then pauses and does the next batch.
5. `verify_deleted` checks every selected topic is gone; `final_report` writes the report;
   `notify` tells `notify_conn_ids` the run finished or failed.

**What to watch**: the `delete_batches` log shows topics deleted/total per batch. A batch that is
not deleted within `batch_timeout_s` fails with *"marked for deletion but not deleted: the brokers
probably run with delete.topic.enable=false"* — or names the dead broker that holds a replica.

**Stopping safely**: mark `delete_batches` failed between batches; later batches are untouched.
Markers already written are acted on by the controller at once and cannot be withdrawn.
Clearing `delete_batches` resumes: deleted topics are skipped, existing markers waited on.

**Rolling back**: impossible for the data. The run's `snapshot.json` holds each topic's
assignment and configs, so a topic can be re-created empty with the same layout.
"""

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
