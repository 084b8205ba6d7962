"""rolling_restart: restart brokers one at a time (or one rack at a time), gated on ISR health from ZooKeeper.

Steps (task ids): plan → approve → roll → final_report → notify. Inputs are Params with a JSON schema;
artifacts go to ``<run_root>/rolling_restart/<run id>/`` (restart_plan.json/.md, the approval,
restart_progress.json, audit.jsonl, notifications.jsonl, final_report.md). The SRE guide is
``docs/runbooks/rolling_restart.md``, shown as the DAG's ``doc_md`` (:mod:`operators.guides`).

Failure: bad inputs fail ``plan`` before any write; a gate not passed in its timeout or a failed
action fails ``roll`` before the next broker; the final report still runs, then ``notify`` sends
``failed`` with the cause and fails the run.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.batches.runbook import gate_params
from operators.reports.outcome import OutcomeNotifyOperator
from operators.guides import runbook_guide
from operators.restart.steps import RestartApprovalOperator, RestartPlanOperator, RestartReportOperator, RollOperator
from operators.runbook_dag import ZK_STEP_ARGS, run_root_param, runbook_dag, zk_conn_param

DAG_ID = "rolling_restart"

PARAMS = {
    "zk_conn_id": zk_conn_param(),
    "brokers": Param(None, type=["null", "string", "array"], items={"type": "integer", "minimum": 0},
                     description="The broker ids to restart, e.g. 1, 2, 3 (read as kafka-runbook restart --brokers "
                                 "reads them); empty: every live broker"),
    "racks": Param([], type=["null", "array"], items={"type": "string", "minLength": 1},
                   description="Only the brokers of these racks (empty: every rack)"),
    "by": Param("broker", type="string", enum=["broker", "rack"],
                description="One broker at a time (default) or one rack at a time (never two racks down)"),
    "action": Param("ssh {host} sudo systemctl restart kafka", type="string", minLength=1,
                    description="Command restarting one broker, run on the worker by bash; {broker}, {host} and "
                                "{rack} are replaced, e.g. 'kubectl -n kafka delete pod kafka-{broker}'"),
    "stop_gate_timeout_s": Param(300, type="number", exclusiveMinimum=0,
                                 description="Seconds the stop gate may take to pass (nothing offline, "
                                             "under-replicated or at min ISR on the broker) before the roll stops"),
    "register_timeout_s": Param(600, type="number", exclusiveMinimum=0,
                                description="Seconds for a restarted broker to register again before the roll stops"),
    "in_sync_timeout_s": Param(900, type="number", exclusiveMinimum=0,
                               description="Seconds for it to be back in the ISR of every partition it hosts"),
    "leaders_timeout_s": Param(300, type="number", exclusiveMinimum=0,
                               description="Seconds for its preferred leaderships to come back (batched elections)"),
    "action_timeout_s": Param(900, type="number", exclusiveMinimum=0,
                              description="The restart action is killed (and the roll stops) after this many seconds"),
    "min_isr_default": Param(1, type="integer", minimum=1,
                             description="min.insync.replicas assumed where neither the topic nor the <default> "
                                         "broker config in ZooKeeper sets it (server.properties is not in ZooKeeper)"),
    "predicted_batch_s": Param(300, type="number", exclusiveMinimum=0,
                               description="Expected seconds per broker, for the maintenance-window check until "
                                           "one broker was timed"),
    "zk_outage_s": Param(120, type="number", exclusiveMinimum=0,
                         description="Seconds a ZooKeeper outage is waited out at a gate (the roll then goes on "
                                     "where it was) before the roll stops, naming the broker and gate"),
    "resume_grace_s": Param(60, type="number", minimum=0,
                            description="On a resume, seconds a broker whose action ran before but is still on its "
                                        "old session gets for a restart under way before its action runs again"),
    "poll_interval_s": Param(1.0, type="number", exclusiveMinimum=0,
                             description="Seconds between ZooKeeper reads while a gate waits"),
    "dry_run": Param(False, type="boolean",
                     description="Plan and evaluate the gates; plan the demotion writes (audit log); restart nothing"),
    "run_root": run_root_param(),
}
PARAMS = gate_params(PARAMS, DAG_ID)      # the shared gates' Params: outside_window, notify_conn_ids

with runbook_dag(DAG_ID, "Restart brokers one at a time, gated on ISR health, leaderships given back", PARAMS,
                 runbook_guide(DAG_ID)) as dag:
    plan = RestartPlanOperator(task_id="plan", brokers="{{ params.brokers }}", racks="{{ params.racks }}",
                               by="{{ params.by }}", action="{{ params.action }}",
                               min_isr_default="{{ params.min_isr_default }}", **ZK_STEP_ARGS)
    approve = RestartApprovalOperator(task_id="approve", run_root="{{ params.run_root }}",
                                      zk_conn_id="{{ params.zk_conn_id }}", dry_run="{{ params.dry_run }}")
    roll = RollOperator(
        task_id="roll", stop_gate_timeout_s="{{ params.stop_gate_timeout_s }}",
        register_timeout_s="{{ params.register_timeout_s }}", in_sync_timeout_s="{{ params.in_sync_timeout_s }}",
        leaders_timeout_s="{{ params.leaders_timeout_s }}", action_timeout_s="{{ params.action_timeout_s }}",
        poll_interval_s="{{ params.poll_interval_s }}", min_isr_default="{{ params.min_isr_default }}",
        zk_outage_s="{{ params.zk_outage_s }}", resume_grace_s="{{ params.resume_grace_s }}",
        predicted_batch_s="{{ params.predicted_batch_s }}", outside_window="{{ params.outside_window }}",
        trigger_rule="none_failed", **ZK_STEP_ARGS)
    report = RestartReportOperator(task_id="final_report", trigger_rule="all_done", **ZK_STEP_ARGS)
    notify = OutcomeNotifyOperator(task_id="notify", **ZK_STEP_ARGS)
    plan >> approve >> roll >> report >> notify
