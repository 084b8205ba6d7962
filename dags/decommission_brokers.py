"""decommission_brokers: move every replica and all leadership off some brokers, safely.

The reference runbook, one instance of the skeleton in ``operators/runbooks/reassignment.py``
(this file says only what differs: its Params, its plan, demotion, the data check and the drain
and controller checks). Steps (task ids): snapshot → plan (Spark) → render_plan_report → approve →
guards → demote → set_throttles (setup) → execute_waves → final_verify → verify_data (optional)
→ remove_throttles (teardown) → elect_preferred_leaders → verify_drained → move_controller → final_report
→ notify.
Inputs are Params with a JSON schema (the trigger form); artifacts go to the run folder
``<run_root>/decommission_brokers/<run id>/``. The SRE guide (the DAG's ``doc_md``) is
``docs/runbooks/decommission_brokers.md``.

Failure: any step that fails stops the steps after it; the throttles are still removed (teardown),
the report and the notification still run, and the notify step fails the run.
"""

from __future__ import annotations

from airflow.sdk import Param

from operators.reassignment.controller import MoveControllerOperator
from operators.plan.step import DecommissionPlanOperator
from operators.runbooks.reassignment import ReassignmentRunbook, reassignment_params, reassignment_runbook
from operators.runbook_dag import broker_ids_param, ids_text, zk_conn_param
from operators.reassignment.verify import VerifyDrainedOperator

SHARED = reassignment_params()
PARAMS = {
    "zk_conn_id": zk_conn_param(),
    "brokers_to_remove": broker_ids_param("Broker ids to decommission (a dead broker too: down, its replicas "
                                          "are re-created from the surviving in-sync replicas)"),
    # null by default (a text field left empty, as sizes_file); typed "7" or "7, 8", or [7] through the API
    "replace_with": Param(None, type=["null", "array", "string"], items={"type": "integer"},
                          description="Optional: replace instead of spreading — the new broker for each broker of "
                                      "brokers_to_remove, in the same order (brokers_to_remove 4, replace_with 7: "
                                      "replace 4 with 7). The new broker takes exactly the old one's replicas, in its "
                                      "position of each replica list, so preferred leadership lands where it was; "
                                      "the new broker must be registered. Empty: the planner spreads the replicas "
                                      "over the kept brokers"),
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
    dag_id="decommission_brokers",
    description="Move all replicas and leadership off brokers, in throttled, approved, resumable waves",
    params=PARAMS,
    plan=lambda args: DecommissionPlanOperator(
        brokers_to_remove="{{ params.brokers_to_remove }}", allow_extra_moves="{{ params.allow_extra_moves }}",
        allow_rack_removal="{{ params.allow_rack_removal }}", replace_with="{{ params.replace_with }}", **args),
    approval_title="Decommission brokers " + ids_text("params.brokers_to_remove")
                   + "{% if params.replace_with %} (replaced by " + ids_text("params.replace_with") + "){% endif %}",
    brokers_to_remove="{{ params.brokers_to_remove }}",
    approve_args={"retire": "{{ params.brokers_to_remove }}"},     # retiring from the approval on (issue 39)
    demote=True, verify_data=True,
    checks=(lambda args: VerifyDrainedOperator(task_id="verify_drained", **args),
            lambda args: MoveControllerOperator(task_id="move_controller",
                                                move_controller="{{ params.move_controller }}", **args)),
))
