"""stuck_reassignment: diagnose a reassignment that makes no progress, then fix it — each fix
behind its own approval.

Steps (task ids): diagnose → approve_rewrite → window → rewrite → approve_election → force_election →
wait_unstuck → final_report → notify (the window and notify gates from
:func:`operators.batches.runbook.gated`). A fix the diagnosis does not call for is skipped (its approval
too). Operators: ``operators/runbooks/stuck.py``; diagnosis: ``kafka_zk/admin/stuck.py``.

Failure: the final report fails the run when anything is still stuck or a fix was rejected.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.batches.runbook import gate_params, gated
from operators.runbook_dag import ZK_STEP_ARGS, run_root_param, runbook_dag, zk_conn_param
from operators.runbooks.stuck import (DiagnoseStuckOperator, FixApprovalOperator, ForceElectionOperator,
                             RewriteReassignmentOperator, StuckReportOperator, WaitUnstuckOperator)

DAG_ID = "stuck_reassignment"

DOC_MD = """
# Stuck reassignment (Kafka in ZooKeeper mode)

**When to use**: `/admin/reassign_partitions` (or a partition's adding replicas) has not changed
for a long time — `cluster_health` reports `stuck_reassignment`, or a runbook's wave stalled.
In ZooKeeper mode a running reassignment cannot be cancelled by deleting its node; the ways out
are the ones operators use by hand, done here through the audited write gate, each approved.

**Diagnosis** (`diagnose`, per partition, written to `diagnosis.md`):
- *target broker not registered* — a target on a dead broker never finishes;
- *not catching up* — the new replica's broker is up but it is not joining the ISR (a fetch
  failure; a lowered `max.message.bytes` is named);
- *controller not acting* — the entry was never started: a node created after someone deleted
  one by hand is ignored by a 2.4.1 controller until the controller changes (docs/zookeeper.md §2.7.1);
- *controller not completing*, *no leader*, *partition gone*, or no controller at all.

**Fixes**, each behind its own approval (another person than the one who triggered; expires):
- `approve_rewrite` → `rewrite` — when a target broker is gone for good: the reassignment is
  rewritten, per partition the way out that copies least: back to the partition's original
  replicas when they are all registered and in the ISR (they hold the data: nothing is copied,
  the controller cancels the move at once), else without the dead broker (a registered broker in
  its place, in a rack the list lacks, least loaded). The approval shows both options and the
  bytes each would copy (from the connection's `log_dirs_source` when it has one). The
  procedure is docs/zookeeper.md §2.7.4: delete the stuck node, create the new one, delete
  `/controller` so that the next controller reads it. Never a hand edit of the live node.
- `approve_election` → `force_election` — when the controller is not acting: delete `/controller`;
  the next controller re-reads the pending node.
Causes no fix here can clear (a fetch failure) are reported with what to check.

A dry run asks no approval and writes nothing; its audit log lists each fix's writes.

Then `wait_unstuck` (bounded) and `final_report`. Throttles are not touched: the run that started
the move owns them (its teardown removes them once the move ends). The diagnosis and the report
list the throttles no runbook run of ours owns (left by Kafka's own tool, which removes them only
with `--verify`, or set by hand), so that someone removes them once nothing moves.
"""

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
    final_report = StuckReportOperator(task_id="final_report", trigger_rule="all_done", **ZK_STEP_ARGS)

    gated([diagnose, approve_rewrite, rewrite, approve_election, force_election, wait_unstuck, final_report],
          first_write=rewrite, what="the stuck reassignment's fixes",
          needed="{{ ti.xcom_pull(task_ids='diagnose')['rewrite'] or ti.xcom_pull(task_ids='diagnose')['election'] }}")
