"""decommission_brokers: move every replica and all leadership off some brokers, safely.

The reference runbook. Steps (task ids): snapshot → plan (Spark) → render_plan_report → approve →
guards → demote → set_throttles (setup) → execute_waves → final_verify → verify_data (optional)
→ remove_throttles (teardown) → elect_preferred_leaders → verify_drained → move_controller → final_report
→ notify.
Inputs are Params with a JSON schema (the trigger form); artifacts go to the run folder
``<run_root>/decommission_brokers/<run id>/``. See ``doc_md`` below for the SRE guide.

Failure: any step that fails stops the steps after it; the throttles are still removed (teardown),
the report and the notification still run, and the notify step fails the run.
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import Param

from operators.approval import PlanApprovalOperator
from operators.election import DemoteOperator, ElectPreferredLeadersOperator
from operators.controller import MoveControllerOperator
from operators.guards import GuardsOperator
from operators.plan import DecommissionPlanOperator
from operators.reassignment import ExecuteWavesOperator
from operators.report import FinalReportOperator, NotifyOperator, RenderPlanReportOperator
from operators.snapshot import SnapshotOperator
from operators.throttles import RemoveThrottlesOperator, SetThrottlesOperator
from operators.verify import FinalVerifyOperator, VerifyDrainedOperator
from operators.verify_data import DataVerifyOperator
from operators.runbook_dag import ZK_STEP_ARGS, pre_approved_param, run_root_param, runbook_dag, zk_conn_param

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
   `pre_approved=true` (maintenance-window policy) skips the wait and records it;
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

PARAMS = {
    "zk_conn_id": zk_conn_param(),
    "brokers_to_remove": Param([], type="array", items={"type": "integer", "minimum": 0}, minItems=1,
                               uniqueItems=True, description="Broker ids to decommission, e.g. [4, 5]"),
    "throttle_bytes_per_sec": Param(52428800, type="integer", minimum=1, maximum=2**63 - 1,
                                    description="Replication throttle per broker during the move, bytes/s"),
    "max_moves_per_broker": Param(5, type="integer", minimum=1,
                                  description="At most this many partition moves per broker in one wave"),
    "sizes_file": Param(None, type=["null", "string"],
                        description="Optional path to `kafka-log-dirs.sh --describe` output (partition sizes)"),
    "capacity_file": Param(None, type=["null", "string"],
                           description="Optional broker disk capacity: Cruise Control's capacity JSON (DISK in MiB) or "
                                       '{"brokers": {"<id>": <bytes>}}; else the connection\'s extra '
                                       "broker_capacity_bytes. Without it the report says capacity unknown"),
    "disk_threshold_pct": Param(85, type="number", exclusiveMinimum=0, maximum=100,
                                description="No broker may be filled past this % of its capacity at any step "
                                            "(a destination holds the new copy while the source still holds the old)"),
    "allow_extra_moves": Param(False, type="boolean",
                               description="With capacity: when moving only the removed brokers' replicas would overfill "
                                           "a broker, also move other replicas off it to make room (rack rule kept; listed "
                                           "in the plan report)"),
    "dry_run": Param(False, type="boolean",
                     description="Plan and report, then only *plan* every write (audit log); write nothing"),
    "pre_approved": pre_approved_param(),
    "spark_conn_id": Param("spark_default", type="string", minLength=1,
                           description="Airflow Spark connection (JSON form, e.g. host local[*]) for the plan job"),
    "run_root": run_root_param(),
    "allow_rack_removal": Param(False, type="boolean",
                                description="Acknowledge that brokers_to_remove empties a whole rack (its "
                                            "replicas move to the other racks); refused without it"),
    "move_controller": Param(False, type="boolean",
                             description="At the end, if the controller is on a removed broker, delete /controller "
                                         "(audited) until a kept broker is elected (at most 3 times); off: only report "
                                         "where it is"),
    "plan_from": Param(None, type=["null", "string"],
                       description="Optional plan/ folder of an earlier run (e.g. a rehearsal) to use instead of "
                                   "planning; guards refuse it if the cluster changed since"),
    "wave_timeout_s": Param(21600, type="integer", minimum=1,
                            description="Fail a wave not finished this many seconds after it was submitted"),
    "poll_interval_s": Param(5.0, type="number", exclusiveMinimum=0,
                             description="Seconds between progress polls while a wave runs"),
    "stall_warning_s": Param(600, type="integer", minimum=1,
                             description="Warn when a wave made no progress for this many seconds"),
    "stall_timeout_s": Param(None, type=["null", "integer"], minimum=1,
                             description="Fail a wave that made no progress for this many seconds (null: never)"),
    "broker_logs": Param("", type="string",
                         description="Where the brokers' state-change logs are, as seen from the worker and the "
                                     "triggerer: a folder, file or glob (e.g. /mnt/kafka-logs/*/state-change.log*). "
                                     "When a wave stalls, the report shows the merged entries about its stuck "
                                     "partitions. Empty: no excerpt"),
    "verify_data": Param(False, type="boolean",
                         description="After the last wave, check over the Kafka protocol (brokers' PLAINTEXT "
                                     "listeners) that every moved replica's log end offset and last batch "
                                     "match its leader's (kafka-replica-verification, tail only)"),
}

ZK = ZK_STEP_ARGS
# the steps that read the brokers being removed (guards, demotion, drain check, report, notice)
REMOVING = dict(ZK_STEP_ARGS, brokers_to_remove="{{ params.brokers_to_remove }}")

with runbook_dag(
        DAG_ID, "Move all replicas and leadership off brokers, in throttled, approved, resumable waves",
        PARAMS, DOC_MD,
) as dag:
    snapshot = SnapshotOperator(task_id="snapshot", zk_conn_id="{{ params.zk_conn_id }}",
                                run_root="{{ params.run_root }}", sizes_file="{{ params.sizes_file }}",
                                capacity_file="{{ params.capacity_file }}",
                                disk_threshold_pct="{{ params.disk_threshold_pct }}")
    plan = DecommissionPlanOperator(
        task_id="plan", spark_conn_id="{{ params.spark_conn_id }}", run_root="{{ params.run_root }}",
        brokers_to_remove="{{ params.brokers_to_remove }}", throttle_bytes_per_sec="{{ params.throttle_bytes_per_sec }}",
        max_moves_per_broker="{{ params.max_moves_per_broker }}", plan_from="{{ params.plan_from }}",
        allow_extra_moves="{{ params.allow_extra_moves }}", allow_rack_removal="{{ params.allow_rack_removal }}")
    report = RenderPlanReportOperator(task_id="render_plan_report",
                                      throttle_bytes_per_sec="{{ params.throttle_bytes_per_sec }}", **ZK)
    approve = PlanApprovalOperator(
        task_id="approve", run_root="{{ params.run_root }}", pre_approved="{{ params.pre_approved }}",
        dry_run="{{ params.dry_run }}",
        subject="Decommission brokers {{ params.brokers_to_remove | join(', ') }}: approve plan "
                "{{ ti.xcom_pull(task_ids='plan')['plan_hash'][:12] }}",
        body="{{ ti.xcom_pull(task_ids='render_plan_report')['approval_body'] }}")
    guards = GuardsOperator(task_id="guards", **REMOVING)
    demote = DemoteOperator(task_id="demote", **REMOVING)
    set_throttles = SetThrottlesOperator(task_id="set_throttles",
                                         throttle_bytes_per_sec="{{ params.throttle_bytes_per_sec }}", **ZK)
    execute_waves = ExecuteWavesOperator(
        task_id="execute_waves", throttle_bytes_per_sec="{{ params.throttle_bytes_per_sec }}",
        wave_timeout_s="{{ params.wave_timeout_s }}", poll_interval_s="{{ params.poll_interval_s }}",
        stall_warning_s="{{ params.stall_warning_s }}", stall_timeout_s="{{ params.stall_timeout_s }}",
        broker_logs="{{ params.broker_logs }}",
        retries=3, retry_delay=timedelta(seconds=15), **ZK)   # a retry resumes the same wave
    final_verify = FinalVerifyOperator(task_id="final_verify", poll_interval_s="{{ params.poll_interval_s }}", **ZK)
    verify_data = DataVerifyOperator(task_id="verify_data", verify_data="{{ params.verify_data }}", **ZK)
    remove_throttles = RemoveThrottlesOperator(task_id="remove_throttles", poll_interval_s="{{ params.poll_interval_s }}",
                                               **ZK)   # defers while a wave of ours still copies
    elect = ElectPreferredLeadersOperator(task_id="elect_preferred_leaders", **ZK)
    drained = VerifyDrainedOperator(task_id="verify_drained", **REMOVING)
    move_controller = MoveControllerOperator(task_id="move_controller",
                                             move_controller="{{ params.move_controller }}", **REMOVING)
    final_report = FinalReportOperator(task_id="final_report", trigger_rule="all_done", **REMOVING)
    notify = NotifyOperator(task_id="notify", trigger_rule="all_done", **REMOVING)

    snapshot >> plan >> report >> approve >> guards >> demote >> set_throttles >> execute_waves >> final_verify
    final_verify >> remove_throttles.as_teardown(setups=set_throttles)
    final_verify >> verify_data
    [final_verify, verify_data, remove_throttles] >> elect >> drained >> move_controller >> final_report >> notify
