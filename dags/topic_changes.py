"""topic_changes: approval-gated topic administration from a declarative spec.

Steps (task ids): diff → approve → window → apply → verify → final_report → notify (the window and
notify gates from :func:`operators.batches.runbook.gated`). Operators:
``operators/runbooks/topic_changes.py``; the spec: ``procedures/plan/topic_spec.py``; the diff:
``procedures/plan/topic_diff.py``. The SRE guide (the DAG's ``doc_md``) is ``docs/runbooks/topic_changes.md``.

Failure: a malformed spec, a refused change (fewer partitions, an unsafe deletion, …) or a stale
diff stops the run before any write; ``verify`` fails when the brokers' view does not show the
changes within ``verify_timeout_s``.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.batches.runbook import gate_params, gated
from operators.guides import runbook_guide
from operators.runbook_dag import ZK_STEP_ARGS, run_root_param, runbook_dag, zk_conn_param
from operators.runbooks.topic_changes import (ApplyTopicChangesOperator, TopicChangesApprovalOperator,
                                     TopicChangesReportOperator, TopicDiffOperator, VerifyTopicChangesOperator)

DAG_ID = "topic_changes"

DOC_MD = runbook_guide(DAG_ID)

PARAMS = {
    "zk_conn_id": zk_conn_param(),
    "spec": Param(None, type=["null", "string"],
                  description="The topic spec, YAML (topics: {name: {partitions, replication_factor, configs, "
                              "delete}}); or leave empty and give spec_file"),
    "spec_file": Param(None, type=["null", "string"],
                       description="Path to the topic spec YAML, as seen from the worker (instead of spec)"),
    "dry_run": Param(False, type="boolean", description="Diff, approve and plan every write (audit log); write nothing"),
    "verify_timeout_s": Param(300, type="integer", minimum=1,
                              description="Seconds to wait for the brokers' view to show the changes"),
    "run_root": run_root_param(),
}

with runbook_dag(DAG_ID, "Create, grow, configure and delete topics from a declarative spec, approved",
                 gate_params(PARAMS, DAG_ID), DOC_MD) as dag:
    diff = TopicDiffOperator(task_id="diff", spec="{{ params.spec }}", spec_file="{{ params.spec_file }}",
                             **ZK_STEP_ARGS)
    approve = TopicChangesApprovalOperator(task_id="approve", run_root="{{ params.run_root }}",
                                           zk_conn_id="{{ params.zk_conn_id }}", dry_run="{{ params.dry_run }}")
    apply = ApplyTopicChangesOperator(task_id="apply", trigger_rule="none_failed", **ZK_STEP_ARGS)
    verify = VerifyTopicChangesOperator(task_id="verify", timeout_s="{{ params.verify_timeout_s }}", **ZK_STEP_ARGS)
    report = TopicChangesReportOperator(task_id="final_report", trigger_rule="all_done", **ZK_STEP_ARGS)
    gated([diff, approve, apply, verify, report], first_write=apply, what="the topic changes",
          needed="{{ not ti.xcom_pull(task_ids='diff')['writes_nothing'] }}")
