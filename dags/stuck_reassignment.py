"""stuck_reassignment: diagnose a reassignment that makes no progress, then fix it — each fix
behind its own approval.

Steps (task ids): diagnose → approve_rewrite → window → rewrite → approve_election → force_election →
wait_unstuck → approve_throttles → remove_throttles → final_report → notify (the window and notify gates
from :func:`operators.batches.runbook.gated`). A fix the diagnosis does not call for is skipped (its
approval too); ``remove_throttles`` removes exactly the foreign throttles listed (Kafka's own tool's,
left after a revert) once nothing moves. Operators: ``operators/runbooks/stuck.py``,
``operators/runbooks/stuck_throttles.py``; diagnosis: ``kafka_zk/admin/stuck.py``.
The SRE guide (the DAG's ``doc_md``) is ``docs/runbooks/stuck_reassignment.md``.

Failure: the final report fails the run when anything is still stuck or a fix was rejected.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.batches.runbook import gate_params, gated
from operators.guides import runbook_guide
from operators.runbook_dag import ZK_STEP_ARGS, run_root_param, runbook_dag, zk_conn_param
from operators.runbooks.stuck import (DiagnoseStuckOperator, FixApprovalOperator, ForceElectionOperator,
                             RewriteReassignmentOperator, StuckReportOperator, WaitUnstuckOperator)
from operators.runbooks.stuck_throttles import RemoveForeignThrottlesOperator

DAG_ID = "stuck_reassignment"

DOC_MD = runbook_guide(DAG_ID)

PARAMS = {
    "zk_conn_id": zk_conn_param(),
    "dry_run": Param(False, type="boolean", description="Diagnose and plan the fixes' writes (audit log); write nothing"),
    "controller_wait_s": Param(120, type="integer", minimum=1,
                               description="Seconds to wait for a new controller after deleting /controller"),
    "fix_timeout_s": Param(600, type="integer", minimum=1,
                           description="Seconds to wait for the moves to finish after the fixes"),
    "run_root": run_root_param(),
}

with runbook_dag(DAG_ID, "Diagnose a reassignment that makes no progress and unstick it, each fix approved",
                 gate_params(PARAMS, DAG_ID), DOC_MD) as dag:
    diagnose = DiagnoseStuckOperator(task_id="diagnose", **ZK_STEP_ARGS)
    approve_rewrite = FixApprovalOperator(task_id="approve_rewrite", fix="rewrite", run_root="{{ params.run_root }}",
                                          zk_conn_id="{{ params.zk_conn_id }}", dry_run="{{ params.dry_run }}")
    rewrite = RewriteReassignmentOperator(task_id="rewrite", controller_wait_s="{{ params.controller_wait_s }}",
                                          trigger_rule="none_failed", **ZK_STEP_ARGS)
    approve_election = FixApprovalOperator(task_id="approve_election", fix="election",
                                           run_root="{{ params.run_root }}", zk_conn_id="{{ params.zk_conn_id }}",
                                           dry_run="{{ params.dry_run }}", trigger_rule="none_failed")
    force_election = ForceElectionOperator(task_id="force_election", trigger_rule="none_failed",
                                           controller_wait_s="{{ params.controller_wait_s }}", **ZK_STEP_ARGS)
    wait_unstuck = WaitUnstuckOperator(task_id="wait_unstuck", timeout_s="{{ params.fix_timeout_s }}",
                                       trigger_rule="none_failed", **ZK_STEP_ARGS)
    approve_throttles = FixApprovalOperator(task_id="approve_throttles", fix="throttles",
                                            run_root="{{ params.run_root }}", zk_conn_id="{{ params.zk_conn_id }}",
                                            dry_run="{{ params.dry_run }}", trigger_rule="none_failed")
    remove_throttles = RemoveForeignThrottlesOperator(task_id="remove_throttles", trigger_rule="none_failed",
                                                      **ZK_STEP_ARGS)
    final_report = StuckReportOperator(task_id="final_report", trigger_rule="all_done", **ZK_STEP_ARGS)

    gated([diagnose, approve_rewrite, rewrite, approve_election, force_election, wait_unstuck, approve_throttles,
           remove_throttles, final_report],
          first_write=rewrite, what="the stuck reassignment's fixes",
          needed="{% set d = ti.xcom_pull(task_ids='diagnose') %}{{ d['rewrite'] or d['election'] or d['throttles'] }}")
