"""decommission_brokers: move every replica and all leadership off some brokers, safely.

The reference runbook, one instance of the skeleton in ``operators/reassignment/runbook.py``
(this file says only what differs: its Params, its plan, demotion, the data check and the drain
and controller checks). Steps (task ids): snapshot → plan (Spark) → render_plan_report → approve →
guards → demote → set_throttles (setup) → execute_waves → final_verify → verify_data (optional)
→ remove_throttles (teardown) → elect_preferred_leaders → verify_drained → move_controller → final_report
→ notify.
Inputs are Params with a JSON schema (the trigger form); artifacts go to the run folder
``<run_root>/decommission_brokers/<run id>/``. See ``doc_md`` below for the SRE guide.

Failure: any step that fails stops the steps after it; the throttles are still removed (teardown),
the report and the notification still run, and the notify step fails the run.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.reassignment.controller import MoveControllerOperator
from operators.plan.step import DecommissionPlanOperator
from operators.reassignment.runbook import ReassignmentRunbook, reassignment_params, reassignment_runbook
from operators.runbook_dag import broker_ids_param, ids_text, zk_conn_param
from operators.reassignment.verify import VerifyDrainedOperator

DAG_ID = "decommission_brokers"

DOC_MD = """
# Decommission brokers (Kafka in ZooKeeper mode)

**When to use**: a broker (or a rack) must leave the cluster for good — hardware retirement,
downsizing, moving hosts. Not for a restart: a bounced broker keeps its replicas.

**Steps**
1. `snapshot` reads the cluster; `plan` (Spark) moves exactly the replicas on the brokers to
   remove, keeps racks apart and balance even, and packs waves; `render_plan_report` writes the
   report (per-broker before/after chart) to the run folder.
2. `approve` waits for a human in *Required actions* (Approve/Reject), showing the plan hash.
   The person who triggered cannot approve (four eyes); the request expires; only the
   maintenance-windows policy skips it, for scheduled runs (docs/maintenance-windows.md).
   `dry_run=true` stops writing anything: every later write is only planned into the audit log.
3. `guards`: no other reassignment running, the plan still matches the cluster ("plan is stale,
   re-plan" otherwise), brokers exist, plan hash = approved hash.
4. `demote` moves leadership off the brokers first; `set_throttles` caps replication traffic;
   `execute_waves` submits one wave at a time and waits (deferred) for the controller.
5. `final_verify`; `verify_data` (only with `verify_data=true`: every moved replica's log end
   offset and last batch equal its leader's, fetched over the Kafka protocol; a replica behind
   is listed, a different last batch fails the step); `remove_throttles` (always runs),
   `elect_preferred_leaders`, `verify_drained`, `move_controller` (records where the controller
   is; with `move_controller=true`, approved with the run, re-elects it until it sits on a kept
   broker), `final_report`, `notify`. For a full comparison of every record:
   `kafka-runbook verify-replicas` (docs/replica-verification.md).

**After the run**: stop the removed brokers promptly. While they stay registered, a later
partition increase or topic creation can place replicas on them again, and a controller on one
of them fails over when it stops (the report says where the controller is).

**What to watch**: the `execute_waves` log prints per poll: partitions done/total (wave and
overall), bytes remaining, throughput, ETA; a warning when a wave makes no progress.
`kafka-runbook reassign --zookeeper <zk>/<chroot> --verify --reassignment-json-file
<run folder>/plan/plan.json` shows the same and never removes a throttle (it restores only a
record its own `--execute` saved). **Do not run Kafka's `kafka-reassign-partitions --verify`**
during or after the run: on 2.4.1, once the file's partitions are complete, it prints
"Throttle was removed." and deletes every broker's throttle rates and the topics' throttled
replica lists, including the throttles that existed before the run, which the runbook keeps.

**How to stop safely**: mark `execute_waves` failed (or let it time out). The wave already in
`/admin/reassign_partitions` keeps running in Kafka (ZooKeeper-mode reassignments cannot be
paused); the teardown keeps our throttles while it copies (it waits, deferred, and says so in
`throttle_janitor.json`, the report and the notification), then removes them the moment it
finishes and restores any that existed before. Clearing
`execute_waves` later resumes: finished waves are never submitted again.

**How to roll back**: the run folder holds `plan/rollback.json` (the original assignment, Kafka's
format). Run the `rollback` runbook (or `kafka-runbook reassign --execute`, then its `--verify`,
never Kafka's) with it once no reassignment is in progress, then a preferred-leader election.

Run folder: `<run_root>/decommission_brokers/<run id>/` — snapshot, plan, approval.json,
audit.jsonl (every ZooKeeper write), guards.json, throttles.json, waves.json, verify.json, reports.
"""

SHARED = reassignment_params()
PARAMS = {
    "zk_conn_id": zk_conn_param(),
    "brokers_to_remove": broker_ids_param("Broker ids to decommission"),
    **{k: SHARED[k] for k in ("throttle_bytes_per_sec", "max_moves_per_broker", "sizes_file", "capacity_file",
                              "disk_threshold_pct")},
    "allow_extra_moves": Param(False, type="boolean",
                               description="With capacity: when moving only the removed brokers' replicas would overfill "
                                           "a broker, also move other replicas off it to make room (rack rule kept; listed "
                                           "in the plan report)"),
    **{k: SHARED[k] for k in ("dry_run", "outside_window", "between_windows", "notify_conn_ids", "spark_conn_id",
                              "run_root")},
    "allow_rack_removal": Param(False, type="boolean",
                                description="Acknowledge that brokers_to_remove empties a whole rack (its "
                                            "replicas move to the other racks); refused without it"),
    "move_controller": Param(False, type="boolean",
                             description="At the end, if the controller is on a removed broker, delete /controller "
                                         "(audited) until a kept broker is elected (at most 3 times); off: only report "
                                         "where it is"),
    **{k: SHARED[k] for k in ("plan_from", "wave_timeout_s", "poll_interval_s", "stall_warning_s", "stall_timeout_s",
                              "rehearse", "broker_logs")},
    "verify_data": Param(False, type="boolean",
                         description="After the last wave, check over the Kafka protocol (brokers' PLAINTEXT "
                                     "listeners) that every moved replica's log end offset and last batch "
                                     "match its leader's (kafka-replica-verification, tail only)"),
}

dag = reassignment_runbook(ReassignmentRunbook(
    dag_id=DAG_ID,
    description="Move all replicas and leadership off brokers, in throttled, approved, resumable waves",
    params=PARAMS, doc_md=DOC_MD,
    plan=lambda args: DecommissionPlanOperator(
        brokers_to_remove="{{ params.brokers_to_remove }}", allow_extra_moves="{{ params.allow_extra_moves }}",
        allow_rack_removal="{{ params.allow_rack_removal }}", **args),
    approval_title="Decommission brokers " + ids_text("params.brokers_to_remove"),
    brokers_to_remove="{{ params.brokers_to_remove }}",
    demote=True, verify_data=True,
    checks=(lambda args: VerifyDrainedOperator(task_id="verify_drained", **args),
            lambda args: MoveControllerOperator(task_id="move_controller",
                                                move_controller="{{ params.move_controller }}", **args)),
))
