"""The batch-runbook factory: one call builds a runbook that writes in approved batches, behind the shared gates.

Beside the reassignment skeleton (:mod:`operators.runbooks.reassignment`), this is the shape of every
runbook that is not a reassignment: ``delete_topics`` and ``preferred_leader_election`` (batches),
``rolling_restart`` (issue 29). A runbook describes itself in a :class:`BatchRunbook`:

* ``dag_id``, ``description``, ``params`` (must hold ``zk_conn_id``, ``run_root`` and ``dry_run``;
  the factory adds the gates' Params ``outside_window`` and ``notify_conn_ids`` when missing),
  ``doc_md``;
* ``plan`` — given the step arguments (``zk_conn_id``, ``run_root``, ``dry_run`` as Jinja), returns
  the task that writes the plan artifacts (the hash the approver approves); any task id;
* ``report`` — given ``kind`` ("preview" / "final") and the step arguments, returns the report task
  (a :class:`~operators.reports.final.PreviewFinalReportOperator`; the preview renders the approval body);
* ``execute`` — given the step arguments plus ``outside_window``, returns the writing step: a
  :class:`~operators.batches.step.BatchStepOperator` (one batch written, waited on, paused, next;
  keeps a :class:`~procedures.batches.book.BatchBook`);
* ``approval_subject`` (Jinja), ``checks`` (steps after the batches, before the final report, e.g.
  ``verify_deleted``), ``snapshot_args`` (extra arguments of the snapshot step), ``tags``.

Task ids, always: ``snapshot`` → *plan* → ``preview_report`` → ``approve`` → *execute* → *checks* →
``final_report`` → ``notify`` (both ``all_done``; the final report fills the run's outcome contract,
``notify`` says it and fails the run unless it succeeded: :mod:`operators.reports.outcome`).

The gates, applied here to every DAG built by this factory rather than by each runbook:

* **approval** enforced at the write: the writing step's writer comes from
  :meth:`~operators.base.RunbookOperator.session`, which asks the run's approval of the plan on
  disk before every write (:mod:`kafka_zk.authority`); **four eyes**: the approval step refuses
  the person who triggered; **dry run**: every write planned and audited, none made;
* **maintenance window**: before each batch (:mod:`operators.batches.window`): outside a window a
  manual run waits (deferred) and a scheduled one is refused before its first write; a batch
  predicted to overrun the open window is not started; ``outside_window=true`` is recorded;
* **notifications** to ``notify_conn_ids``: ``approval_requested`` (the approval step),
  ``window_paused`` (the batch step), ``finished`` / ``failed`` (``notify``);
* **audit**: every write (and every planned write of a dry run) in the run's ``audit.jsonl``.

:class:`WindowGateOperator` is the window gate as a step of its own, for the single-change runbooks
(``stuck_reassignment``, ``topic_changes``) whose one change is one batch: the factory's
:func:`gated` puts it before their first write and the shared
:class:`~operators.reports.outcome.OutcomeNotifyOperator` after their end.

Failure: a spec without the required Params, or whose ``execute`` is not a batch step, raises
``ValueError`` at parse time (the DAG shows an import error naming it). The steps' own failures are
documented in their modules.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from airflow.sdk import DAG, BaseOperator, Param

from operators.approval.step import PlanApprovalOperator
from operators.base import RunbookOperator, as_bool
from operators.batches.step import BatchStepOperator
from operators.batches.window import hold_for_window, note_resumed
from operators.deferral import DEFERRING_RETRIES
from operators.reports.outcome import OutcomeNotifyOperator
from operators.runbook_dag import ZK_STEP_ARGS, runbook_dag
from operators.plan.snapshot import SnapshotOperator

StepFactory = Callable[[dict[str, Any]], BaseOperator]
REQUIRED_PARAMS = ("zk_conn_id", "run_root", "dry_run")


def outside_window_param() -> Param:
    return Param(False, type="boolean",
                 description="Manual emergency: write even when the maintenance-windows file has no window open for "
                             "this cluster and runbook (recorded in windows.json and the log). Off: a manual run "
                             "outside a window waits for the next one, and no batch starts unless it is predicted "
                             "to finish before its window closes (docs/maintenance-windows.md)")


def notify_conn_ids_param() -> Param:
    return Param([], type=["null", "array"], items={"type": "string"},
                 description="Airflow Connection ids to notify (smtp: e-mail to the connection's extra 'to'; http: "
                             "JSON webhook) on approval requested, waiting for a maintenance window, finished and "
                             "failed. Empty: logged only")


def gate_params(params: Mapping[str, Param], dag_id: str) -> dict[str, Param]:
    """``params`` with the gates' Params added (``outside_window``, ``notify_conn_ids``); refuses a spec
    without ``zk_conn_id``, ``run_root`` or ``dry_run``."""
    missing = [k for k in REQUIRED_PARAMS if k not in params]
    if missing:
        raise ValueError(f"{dag_id}: a gated runbook needs the Param(s) {missing} (zk_conn_param(), run_root_param(), "
                         "a boolean dry_run)")
    out = dict(params)
    out.setdefault("outside_window", outside_window_param())
    out.setdefault("notify_conn_ids", notify_conn_ids_param())
    return out


class WindowGateOperator(RunbookOperator):
    """The maintenance-window gate as a step: returns when a window admitting the runbook is open (or
    windows do not bind the run); else waits deferred for the next one (a manual run) or refuses (a
    scheduled one). Writes nothing; not checked in a dry run, nor when ``needed`` (Jinja: whether the
    steps after it will write anything, e.g. the diff's verdict) renders false."""

    template_fields: Sequence[str] = (*RunbookOperator.template_fields, "outside_window", "needed")
    ui_color = "#fff3cd"

    def __init__(self, *, outside_window: Any = False, what: str = "the change", needed: Any = True,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.outside_window = outside_window
        self.what = what
        self.needed = needed

    def execute(self, context: Any) -> dict:
        if self.is_dry_run:
            return {"window": "dry run: not checked"}
        if not as_bool(self.needed):
            self.log.info("nothing will be written: the maintenance windows are not checked")
            return {"window": "nothing to write: not checked"}
        folder = self.folder(context)
        hold_for_window(self, context, folder, 0, self.what, None, False, self.outside_window, time.time())
        return {"window": "open or not binding"}

    def resume_in_window(self, context: Any, event: Any = None) -> dict:
        note_resumed(self.folder(context), time.time())
        return self.execute(context)


@dataclass(frozen=True)
class BatchRunbook:
    """What one batch runbook says (see the module docstring)."""

    dag_id: str
    description: str
    params: Mapping[str, Param]
    doc_md: str
    plan: StepFactory
    report: Callable[[str, dict[str, Any]], BaseOperator]
    execute: StepFactory
    approval_subject: str
    checks: Sequence[StepFactory] = ()
    snapshot_args: Mapping[str, str] = field(default_factory=dict)
    tags: Sequence[str] = ()


def batch_runbook(spec: BatchRunbook) -> DAG:
    """The DAG of ``spec``: the shared gates around its plan, batches and checks."""
    params = gate_params(spec.params, spec.dag_id)
    zk = dict(ZK_STEP_ARGS)
    with runbook_dag(spec.dag_id, spec.description, params, spec.doc_md, tags=spec.tags) as dag:
        snapshot = SnapshotOperator(task_id="snapshot", zk_conn_id="{{ params.zk_conn_id }}",
                                    run_root="{{ params.run_root }}", **spec.snapshot_args)
        plan = spec.plan(dict(zk))
        preview = spec.report("preview", dict(zk, task_id="preview_report"))
        approve = PlanApprovalOperator(
            task_id="approve", run_root="{{ params.run_root }}", zk_conn_id="{{ params.zk_conn_id }}",
            dry_run="{{ params.dry_run }}", subject=spec.approval_subject,
            body="{{ ti.xcom_pull(task_ids='preview_report')['approval_body'] }}")
        execute = spec.execute(dict(zk, outside_window="{{ params.outside_window }}", **DEFERRING_RETRIES))
        if not isinstance(execute, BatchStepOperator):
            raise ValueError(f"{spec.dag_id}: execute must build a BatchStepOperator (the batch machine with the "
                             f"window gate), not {type(execute).__name__}")
        chain: list[BaseOperator] = [snapshot, plan, preview, approve, execute,
                                     *(make(dict(zk)) for make in spec.checks)]
        chain.append(spec.report("final", dict(zk, task_id="final_report", trigger_rule="all_done")))
        chain.append(OutcomeNotifyOperator(task_id="notify", **zk))
        for upstream, downstream in zip(chain, chain[1:]):
            upstream >> downstream
    return dag


def gated(steps: Sequence[BaseOperator], first_write: BaseOperator, what: str, needed: str = "True"
          ) -> list[BaseOperator]:
    """A single-change runbook's chain (in a ``runbook_dag`` context whose Params went through
    :func:`gate_params`) with the gates: the ``window`` step right before ``first_write`` (same
    trigger rule; ``needed``: Jinja, see :class:`WindowGateOperator`) and ``notify`` after the last
    step. The approvals, dry run and audit are the runbook's steps' own (each writer asks its change
    document's approval at the write)."""
    if first_write not in steps:
        raise ValueError(f"{first_write.task_id} is not one of the steps")
    at = list(steps).index(first_write)
    window = WindowGateOperator(task_id="window", what=what, outside_window="{{ params.outside_window }}", needed=needed,
                                trigger_rule=first_write.trigger_rule, **ZK_STEP_ARGS)
    chain = [*steps[:at], window, *steps[at:]]
    chain.append(OutcomeNotifyOperator(task_id="notify", **ZK_STEP_ARGS))
    for upstream, downstream in zip(chain, chain[1:]):
        upstream >> downstream
    if at > 0:
        # an approval's Reject skips its direct downstream tasks only: the first write stays one of them
        steps[at - 1] >> first_write
    return chain
