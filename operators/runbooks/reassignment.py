"""The skeleton every data-moving runbook is built on: one factory, one DAG shape.

A runbook that moves replicas (decommission, add brokers, rebalance, ...) shares every step but
its plan; its file in ``dags/`` says only what differs and calls :func:`reassignment_runbook`::

    from operators.runbooks.reassignment import ReassignmentRunbook, reassignment_params, reassignment_runbook

    dag = reassignment_runbook(ReassignmentRunbook(
        dag_id="add_brokers", description="...", params={"new_brokers": Param(...)},
        plan=lambda plan_args: AddBrokersPlanOperator(new_brokers="{{ params.new_brokers }}", **plan_args),
        approval_title="Add brokers {{ params.new_brokers | join(', ') }}"))

The API (read by every runbook file):

* :func:`reassignment_params` — the Params every data-moving runbook takes (throttle, moves per
  broker, sizes, capacity, dry run, Spark connection, run root, ``plan_from``, wave
  timeout, polling and stall settings, state-change logs), each with a description.
* :class:`ReassignmentRunbook` — what differs: ``params`` (the runbook's own; the skeleton puts
  ``zk_conn_id`` (:func:`operators.runbook_dag.zk_conn_param`) first and :func:`reassignment_params`
  after them, each where the runbook has not placed it itself, as decommission does to order its
  form), ``doc_md`` (default: the guide, ``operators.guides.runbook_guide(dag_id)``), ``plan`` (a callable given the shared plan-step
  arguments, see :data:`PLAN_ARGS`, returning a :class:`operators.plan.step.SparkPlanOperator` subclass
  instance; the skeleton sets ``task_id="plan"``), ``approval_title`` (Jinja; the skeleton adds
  ": approve plan <hash>"), ``brokers_to_remove`` (the Jinja expression or literal the guards,
  demote, reports and notice read; ``[]`` when the runbook removes none), ``guards`` (a callable
  given the step arguments returning the guards task; default :class:`GuardsOperator`, whose
  :meth:`~operators.reassignment.guards.GuardsOperator.extra_problems` a subclass overrides for its own
  guards), ``demote`` (move leadership off ``brokers_to_remove`` first), ``verify_data`` (the
  optional data check; needs the ``verify_data`` Param) and ``checks`` (callables given the step
  arguments, each returning one task run after the preferred election and before the final
  report, in order — e.g. decommission's ``verify_drained``).
* :func:`reassignment_runbook` — builds the DAG. Task ids, always: ``snapshot`` → ``plan`` →
  ``render_plan_report`` → ``rehearse`` (the exact plan on an emulated copy,
  :mod:`operators.rehearsal.step`; its headline goes into the approval body) → ``approve`` → ``guards`` → [``demote``] → ``set_throttles`` (setup) →
  ``execute_waves`` (deferrable, resumable, retried) → ``final_verify`` → [``verify_data``] →
  ``remove_throttles`` (teardown: runs whatever failed; keeps throttles while a wave of ours
  copies) → ``elect_preferred_leaders`` → *checks* → ``final_report`` → ``notify`` (both
  ``all_done``; notify fails the run if any step failed).

Writing a new runbook: subclass :class:`operators.plan.step.SparkPlanOperator` (set ``operation`` to a
key of ``spark_jobs/operations.py`` — add the kernel call there and any flag to
``spark_jobs/plan_job.py`` — and override ``check_inputs`` / ``job_args`` /
``check_plan_matches``; examples: :mod:`operators.plan.balance_ops`); reports title themselves from
:data:`procedures.reports.titles.WHAT` (default: the DAG id, capitalised); the DAG file needs its
guide ``docs/runbooks/<dag_id>.md`` (the skeleton's default ``doc_md``) and a
description on every Param (``tests/dags/test_all_dags.py`` checks both); ``tests/dags/moving_runbook.py`` has the
shared end-to-end checks (dry run, rejection, stale plan, throttles after a failure mid-wave).

Failure: building a DAG with a plan task whose id is not ``plan``, or asking for ``verify_data``
without its Param, raises ``ValueError`` at parse time (the DAG shows an import error naming it).
Each step's own failures are documented in its module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from airflow.sdk import DAG, BaseOperator, Param

from operators.approval.step import PlanApprovalOperator
from operators.deferral import DEFERRING_RETRIES
from operators.guides import runbook_guide
from operators.reassignment.leadership import DemoteOperator, ElectPreferredLeadersOperator
from operators.reassignment.guards import GuardsOperator
from operators.reassignment.execute import ExecuteWavesOperator
from operators.rehearsal.step import RehearsalReportLink, RehearseOperator, rehearse_param
from operators.reports.final import FinalReportOperator, RenderPlanReportOperator
from operators.reports.outcome import OutcomeNotifyOperator
from operators.runbook_dag import ZK_STEP_ARGS, run_root_param, runbook_dag, zk_conn_param
from operators.plan.snapshot import SnapshotOperator
from operators.reassignment.throttles import RemoveThrottlesOperator, SetThrottlesOperator
from operators.reassignment.verify import FinalVerifyOperator
from operators.reassignment.verify_data import DataVerifyOperator

#: What the skeleton hands a runbook's ``plan`` callable: the shared plan-step arguments.
PLAN_ARGS = dict(spark_conn_id="{{ params.spark_conn_id }}", run_root="{{ params.run_root }}",
                 throttle_bytes_per_sec="{{ params.throttle_bytes_per_sec }}",
                 max_moves_per_broker="{{ params.max_moves_per_broker }}", plan_from="{{ params.plan_from }}")

StepFactory = Callable[[dict[str, Any]], BaseOperator]


def reassignment_params(throttle_default: int = 52428800) -> dict[str, Param]:
    """The Params every data-moving runbook takes (the skeleton adds them after the runbook's own)."""
    return {
        "throttle_bytes_per_sec": Param(throttle_default, type="integer", minimum=1, maximum=2**63 - 1,
                                        description="Replication throttle per broker during the move, bytes/s"),
        "max_moves_per_broker": Param(None, type=["null", "integer"], minimum=1,
                                      description="At most this many partition moves per broker in one wave "
                                                  "(default: no cap; the waves are sized by bytes and the "
                                                  "predicted time, and the plan report says what shaped them)"),
        "sizes_file": Param(None, type=["null", "string"],
                            description="Optional path to `kafka-log-dirs.sh --describe` output (partition sizes)"),
        "capacity_file": Param(None, type=["null", "string"],
                               description="Optional broker disk capacity: Cruise Control's capacity JSON (DISK in "
                                           'MiB) or {"brokers": {"<id>": <bytes>}}; else the connection\'s extra '
                                           "broker_capacity_bytes. Without it the report says capacity unknown"),
        "disk_threshold_pct": Param(85, type="number", exclusiveMinimum=0, maximum=100,
                                    description="No broker may be filled past this % of its capacity at any step "
                                                "(a destination holds the new copy while the source still holds "
                                                "the old)"),
        "dry_run": Param(False, type="boolean",
                         description="Plan and report, then only *plan* every write (audit log); write nothing"),
        "outside_window": Param(False, type="boolean",
                                description="Manual emergency: run even when the maintenance-windows file has no "
                                            "window open for this cluster and runbook (recorded in guards.json, the "
                                            "report and the notification). Off: a manual run outside a window waits "
                                            "for the next one; no wave starts unless it is predicted to finish "
                                            "before its window closes (docs/maintenance-windows.md)"),
        "between_windows": Param("keep", type="string", enum=["keep", "remove"],
                                 description="While the run waits for the next window: keep the throttles (default; "
                                             "data may still be catching up) or remove them (pre-run values "
                                             "restored) and set them again when the window opens"),
        "notify_conn_ids": Param([], type=["null", "array"], items={"type": "string"},
                                 description="Airflow Connection ids to notify (smtp: e-mail to the connection's "
                                             "extra 'to'; http: JSON webhook) on approval requested, paused at a "
                                             "window's end, stall, finished and failed. Empty: logged only"),
        "spark_conn_id": Param("spark_default", type="string", minLength=1,
                               description="Airflow Spark connection (JSON form, e.g. host local[*]) for the plan job"),
        "run_root": run_root_param(),
        "plan_from": Param(None, type=["null", "string"],
                           description="Optional plan/ folder of an earlier run (e.g. a rehearsal) to use instead of "
                                       "planning; guards refuse it if the cluster changed since"),
        "wave_timeout_s": Param(21600, type="integer", minimum=1,
                                description="Fail a wave not finished this many seconds after it was submitted"),
        "poll_interval_s": Param(5.0, type="number", exclusiveMinimum=0,
                                 description="Seconds between progress polls while a wave runs"),
        "stall_warning_s": Param(None, type=["null", "integer"], minimum=1,
                                 description="Warn when a wave made no progress for this many seconds (null: "
                                             "automatic — from follower log sizes when the connection names a "
                                             "log_dirs_source, else 1.5x the largest partition's copy time at the "
                                             "throttle, at least 60 s)"),
        "stall_timeout_s": Param(None, type=["null", "integer"], minimum=1,
                                 description="Fail a wave that made no progress for this many seconds (null: never)"),
        "throttle_janitor_s": Param(7 * 24 * 3600, type="integer", minimum=60,
                                    description="How long remove_throttles keeps the throttles while a partition of "
                                                "this run is still being reassigned (a failed or stopped wave), "
                                                "removing them as soon as it finishes; past this it gives up and "
                                                "keeps them, failing with the partitions named (default 7 days)"),
        "rehearse": rehearse_param(),
        "broker_logs": Param(None, type=["null", "string"],
                             description="Where the brokers' state-change logs are, as seen from the worker and the "
                                         "triggerer: a folder, file or glob (e.g. /mnt/kafka-logs/*/state-change.log*)"
                                         ". When a wave stalls, the report shows the merged entries about its stuck "
                                         "partitions. Left empty: no excerpt"),
    }


def _default_guards(args: dict[str, Any]) -> BaseOperator:
    return GuardsOperator(task_id="guards", **args)


@dataclass(frozen=True)
class ReassignmentRunbook:
    """What one data-moving runbook says (see the module docstring)."""

    dag_id: str
    description: str
    params: Mapping[str, Param]
    plan: Callable[[dict[str, Any]], BaseOperator]
    approval_title: str
    doc_md: str | None = None
    brokers_to_remove: Any = field(default_factory=list)
    guards: StepFactory = _default_guards
    demote: bool = False
    verify_data: bool = False
    checks: Sequence[StepFactory] = ()
    tags: Sequence[str] = ()
    #: extra arguments of the ``approve`` step (:class:`PlanApprovalOperator`): ``retire`` (a
    #: decommission's brokers, recorded as retiring when approved), ``release_retired_by`` (a rollback)
    approve_args: Mapping[str, Any] = field(default_factory=dict)


def reassignment_runbook(spec: ReassignmentRunbook) -> DAG:
    """The DAG of ``spec``: the shared steps around its plan, guards and checks."""
    # zk_conn_id first, then the runbook's own, then the shared ones it has not placed itself
    params = {"zk_conn_id": zk_conn_param(), **spec.params}
    for name, param in reassignment_params().items():
        params.setdefault(name, param)
    if spec.verify_data and "verify_data" not in params:
        raise ValueError(f"{spec.dag_id}: verify_data=True needs a 'verify_data' Param")
    zk = dict(ZK_STEP_ARGS)
    # the steps that read the brokers being removed (guards, demotion, report, notice)
    removing = dict(ZK_STEP_ARGS, brokers_to_remove=spec.brokers_to_remove)
    snapshot_args = {k: f"{{{{ params.{k} }}}}" for k in ("sizes_file", "capacity_file", "disk_threshold_pct")
                     if k in params}
    doc_md = runbook_guide(spec.dag_id) if spec.doc_md is None else spec.doc_md
    with runbook_dag(spec.dag_id, spec.description, params, doc_md, tags=spec.tags) as dag:
        snapshot = SnapshotOperator(task_id="snapshot", zk_conn_id="{{ params.zk_conn_id }}",
                                    run_root="{{ params.run_root }}", **snapshot_args)
        plan = spec.plan(dict(PLAN_ARGS, task_id="plan"))
        if plan.task_id != "plan":
            raise ValueError(f"{spec.dag_id}: the plan task must have task_id 'plan', not {plan.task_id!r}")
        report = RenderPlanReportOperator(task_id="render_plan_report",
                                          throttle_bytes_per_sec="{{ params.throttle_bytes_per_sec }}", **zk)
        approve = PlanApprovalOperator(
            task_id="approve", run_root="{{ params.run_root }}", zk_conn_id="{{ params.zk_conn_id }}",
            dry_run="{{ params.dry_run }}", **spec.approve_args,
            subject=spec.approval_title + ": approve plan {{ ti.xcom_pull(task_ids='plan')['plan_hash'][:12] }}",
            body="{{ ti.xcom_pull(task_ids='render_plan_report')['approval_body'] }}"
                 "{% set r = ti.xcom_pull(task_ids='rehearse') %}{% if r %}\n\n{{ r['approval_line'] }}{% endif %}")
        rehearse = RehearseOperator(
            task_id="rehearse", rehearse="{{ params.rehearse }}",
            throttle_bytes_per_sec="{{ params.throttle_bytes_per_sec }}", wave_timeout_s="{{ params.wave_timeout_s }}",
            stall_timeout_s="{{ params.stall_timeout_s }}", between_windows="{{ params.between_windows }}",
            outside_window="{{ params.outside_window }}", demote=spec.brokers_to_remove if spec.demote else [],
            poll_interval_s="{{ params.poll_interval_s }}", **zk)
        guards = spec.guards(dict(removing, outside_window="{{ params.outside_window }}",
                                  throttle_bytes_per_sec="{{ params.throttle_bytes_per_sec }}"))
        chain: list[BaseOperator] = [snapshot, plan, report, rehearse, approve, guards]
        if spec.demote:
            # retried like execute_waves: a foreign reassignment that stops it is waited out
            chain.append(DemoteOperator(task_id="demote", **DEFERRING_RETRIES, **removing))
        set_throttles = SetThrottlesOperator(task_id="set_throttles",
                                             throttle_bytes_per_sec="{{ params.throttle_bytes_per_sec }}", **zk)
        execute_waves = ExecuteWavesOperator(
            task_id="execute_waves", throttle_bytes_per_sec="{{ params.throttle_bytes_per_sec }}",
            wave_timeout_s="{{ params.wave_timeout_s }}", poll_interval_s="{{ params.poll_interval_s }}",
            stall_warning_s="{{ params.stall_warning_s }}", stall_timeout_s="{{ params.stall_timeout_s }}",
            broker_logs="{{ params.broker_logs }}", outside_window="{{ params.outside_window }}",
            between_windows="{{ params.between_windows }}",
            **DEFERRING_RETRIES, **zk)   # a retry resumes the same wave (operators.deferral)
        # read-only and idempotent: retried like execute_waves (a ZooKeeper blip as it starts, seed 1025)
        final_verify = FinalVerifyOperator(task_id="final_verify", poll_interval_s="{{ params.poll_interval_s }}",
                                           **DEFERRING_RETRIES, **zk)
        chain += [set_throttles, execute_waves, final_verify]
        for upstream, downstream in zip(chain, chain[1:]):
            upstream >> downstream
        remove_throttles = RemoveThrottlesOperator(task_id="remove_throttles",
                                                   poll_interval_s="{{ params.poll_interval_s }}",
                                                   janitor_timeout_s="{{ params.throttle_janitor_s }}",
                                                   **zk)   # defers while a wave of ours still copies
        final_verify >> remove_throttles.as_teardown(setups=set_throttles)
        before_election: list[BaseOperator] = [final_verify]
        if spec.verify_data:
            verify_data = DataVerifyOperator(task_id="verify_data", verify_data="{{ params.verify_data }}", **zk)
            final_verify >> verify_data
            before_election.append(verify_data)
        elect = ElectPreferredLeadersOperator(task_id="elect_preferred_leaders", **zk)
        [*before_election, remove_throttles] >> elect
        tail: list[BaseOperator] = [elect, *(make(dict(removing)) for make in spec.checks)]
        final_report = FinalReportOperator(task_id="final_report", trigger_rule="all_done", **removing)
        final_report.operator_extra_links = (*final_report.operator_extra_links, RehearsalReportLink())
        tail.append(final_report)
        tail.append(OutcomeNotifyOperator(task_id="notify", **ZK_STEP_ARGS))
        for upstream, downstream in zip(tail, tail[1:]):
            upstream >> downstream
    return dag
