"""The steps of the rolling_restart runbook: plan, approve, roll, final report.

* **RestartPlanOperator** (``plan``) — the brokers, their order and batches on the live cluster
  (:func:`procedures.restart.plan.plan_roll`), written to ``restart_plan.json`` (what is approved) and
  ``restart_plan.md`` with what the stop gate says of each batch now.
* **RestartApprovalOperator** (``approve``) — the whole roll approved once, by another person, in
  time, exactly that plan (:mod:`operators.change_approval`): the list, the order, the action.
* **RollOperator** (``roll``) — every batch through :func:`procedures.restart.roll.roll_batch`, its
  progress in ``restart_progress.json`` (a cleared task resumes at the next broker not restarted).
  The action is the plan's command template, run per broker by Airflow's
  :class:`~airflow.providers.standard.hooks.subprocess.SubprocessHook` (``bash -c``; an ``ssh`` or
  ``kubectl`` line runs from the worker). Before a batch starts, the shared maintenance-window gate
  (:func:`operators.batches.window.hold_for_window`) must find a window open with room for one
  batch (the slowest batch done so far, else ``predicted_batch_s``); otherwise the step waits,
  deferred, for the next opening and notifies ``window_paused``. Writes (demotion, elections) go
  through the write gate under the approval of the plan.
* **RestartReportOperator** (``final_report``, all done) — fills the outcome contract
  (:mod:`operators.reports.outcome`): each broker's timeline (:mod:`procedures.restart.report`) as
  its sections, the broker and gate the roll stopped at as the cause; the shared ``notify`` step
  says it (note, ``finished`` / ``failed``) and fails the run unless it succeeded.

Failure: bad inputs fail ``plan`` (:class:`~kafka_zk.errors.InvalidInput`) before any write; a
gate not passed in time, a failed action, a ZooKeeper outage past ``zk_outage_s`` or anything else
a gate meets fails ``roll`` with a :class:`~procedures.restart.roll.RollStopped` naming the broker,
the gate and the cause, plus how to resume here (clear ``roll``: :data:`RESUME`); the report still
runs, and ``notify`` sends ``failed`` with that cause and fails the run; a window that can never fit
raises :class:`~operators.errors.OutsideWindow`.
"""

from __future__ import annotations

import json
import time
from typing import Any, Sequence

from airflow.providers.standard.hooks.subprocess import SubprocessHook

from kafka_zk.authority import WriteAuthority
from kafka_zk.outage import ZK_OUTAGE_S
from procedures.restart.gates import stop_problems
from procedures.run_folder import RunFolder
from kafka_zk.snapshot import read_snapshot
from operators.base import RunbookOperator
from procedures.batches.book import BatchState
from operators.approval.change import ChangeApprovalOperator, require_change_approval
from operators.batches.window import hold_for_window, note_resumed
from operators.reports.links import PlanReportLink, ProgressLink, RunReportsLink
from operators.reports.outcome import Facts, OutcomeReportOperator
from procedures.restart.plan import RestartPlan, plan_roll
from procedures.restart.report import outcome, report_md
from procedures.restart.roll import Roll, RestartBook, RollSettings, RollStopped, load_progress, roll_all
from operators.runtime import change_approval
from procedures.outcome.render import markdown_page

PLAN = "restart_plan.json"
PLAN_MD = "restart_plan.md"
PROGRESS = "restart_progress.json"
APPROVAL = "rolling_restart"
#: how a stopped roll is resumed in Airflow (the engine says "resume the roll")
RESUME = "To resume the roll, clear its roll task (the run's progress file keeps where it stopped)"


def load_plan(folder: RunFolder) -> RestartPlan:
    return RestartPlan.from_json(json.loads((folder.root / PLAN).read_text(encoding="utf-8")))


def load_book(folder: RunFolder, plan: RestartPlan) -> RestartBook:
    return load_progress(folder.root / PROGRESS, plan.batches)


class RestartPlanOperator(RunbookOperator):
    """Which brokers, in which order, with which action: ``restart_plan.json`` / ``.md`` (and the
    run's ``plan_report.md`` / ``.html``, the page every runbook's Plan report button opens)."""

    operator_extra_links = (PlanReportLink(), RunReportsLink())

    template_fields: Sequence[str] = (*RunbookOperator.template_fields, "brokers", "racks", "by", "action",
                                      "min_isr_default")

    def __init__(self, *, brokers: Any = "all", racks: Any = (), by: Any = "broker", action: Any = "",
                 min_isr_default: Any = 1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.brokers = brokers
        self.racks = racks
        self.by = by
        self.action = action
        self.min_isr_default = min_isr_default

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        racks = [self.racks] if isinstance(self.racks, str) and self.racks else list(self.racks or [])
        with self.zk_client(context) as client:
            snap = read_snapshot(client, with_configs=True)
        plan = plan_roll(snap, self.brokers, racks, str(self.by), str(self.action))
        held = {batch: stop_problems(snap, batch, int(self.min_isr_default)) for batch in plan.batches}
        lines = [plan.text(), "", "## The stop gate now", ""]
        for batch, problems in held.items():
            lines.append(f"- broker(s) {', '.join(map(str, batch))}: " + (
                "passes" if not problems else f"would hold on {len(problems)} partition(s): "
                + "; ".join(map(str, problems[:5])) + (" …" if len(problems) > 5 else "")))
        folder.write_json(folder.root / PLAN, plan.to_json())
        text = "# Rolling restart: plan\n\n" + "\n".join(lines) + "\n"
        folder.write_text(folder.root / PLAN_MD, text)
        folder.write_text(folder.plan_report_md, text)      # the plan report every runbook links to
        folder.write_text(folder.plan_report_html, markdown_page("Rolling restart: plan", text))
        self.log.info("%s", "\n".join(lines))
        return {"brokers": len(plan.brokers), "batches": len(plan.batches), "plan_sha256": plan.sha256()}


class RestartApprovalOperator(ChangeApprovalOperator):
    """The whole roll, approved once: the list, the order and the action."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("subject", "Rolling restart: approve the order and the action")
        super().__init__(name=APPROVAL, document=PLAN, **kwargs)

    def writes_text(self, doc: dict, folder: RunFolder) -> str:
        return ((folder.root / PLAN_MD).read_text(encoding="utf-8")
                + "\n\n**This approval allows**, per broker in this order and only after its stop gate passes: "
                  "the replica re-orderings and preferred elections that move its leadership away and back "
                  "(each audited), and the restart action above, run once for it.")


class RollOperator(RunbookOperator):
    """Every batch of the approved plan, in order (see module docstring)."""

    operator_extra_links = (ProgressLink(), PlanReportLink(), RunReportsLink())

    template_fields: Sequence[str] = (*RunbookOperator.template_fields, "stop_gate_timeout_s", "register_timeout_s",
                                      "in_sync_timeout_s", "leaders_timeout_s", "action_timeout_s", "poll_interval_s",
                                      "min_isr_default", "predicted_batch_s", "outside_window", "zk_outage_s",
                                      "resume_grace_s")

    def __init__(self, *, stop_gate_timeout_s: Any = 300, register_timeout_s: Any = 600, in_sync_timeout_s: Any = 900,
                 leaders_timeout_s: Any = 300, action_timeout_s: Any = 900, poll_interval_s: Any = 1.0,
                 min_isr_default: Any = 1, predicted_batch_s: Any = 300, outside_window: Any = False,
                 zk_outage_s: Any = ZK_OUTAGE_S, resume_grace_s: Any = 60, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.stop_gate_timeout_s = stop_gate_timeout_s
        self.register_timeout_s = register_timeout_s
        self.in_sync_timeout_s = in_sync_timeout_s
        self.leaders_timeout_s = leaders_timeout_s
        self.action_timeout_s = action_timeout_s
        self.poll_interval_s = poll_interval_s
        self.min_isr_default = min_isr_default
        self.predicted_batch_s = predicted_batch_s
        self.outside_window = outside_window
        self.zk_outage_s = zk_outage_s
        self.resume_grace_s = resume_grace_s

    def write_authority(self, folder: RunFolder) -> WriteAuthority:
        return change_approval(folder, APPROVAL, PLAN)

    def settings(self) -> RollSettings:
        return RollSettings(float(self.stop_gate_timeout_s), float(self.register_timeout_s),
                            float(self.in_sync_timeout_s), float(self.leaders_timeout_s),
                            poll_s=float(self.poll_interval_s), min_isr_default=int(self.min_isr_default),
                            outage_s=float(self.zk_outage_s), resume_grace_s=float(self.resume_grace_s))

    def action(self, plan: RestartPlan):
        """The plan's command for one broker, run by SubprocessHook; its last output line, or raise."""
        hook = SubprocessHook()

        def act(broker: int) -> str:
            cmd = plan.command(broker)
            self.log.info("broker %d: running %s", broker, cmd)
            result = hook.run_command(["timeout", f"{float(self.action_timeout_s):g}", "bash", "-c", cmd])
            if result.exit_code != 0:
                raise RuntimeError(f"`{cmd}` exited {result.exit_code}: {result.output}")
            return result.output
        return act, plan.command

    def execute(self, context: Any, event: Any = None) -> dict:
        folder = self.folder(context)
        plan = load_plan(folder)
        if not self.is_dry_run:
            require_change_approval(folder, APPROVAL, PLAN)
        book = load_book(folder, plan)
        act, command = self.action(plan)

        def before_batch(b: RestartBook, index: int) -> None:
            """The shared window gate: not started unless it fits; else wait (deferred) for the next opening."""
            if self.is_dry_run:
                return
            times = [x.done_at - x.submitted_at for x in b.batches if x.done_at and x.submitted_at]
            written = any(x.submitted_at is not None for x in b.batches)
            hold_for_window(self, context, folder, index, f"broker(s) {', '.join(b.batch(index).items)}",
                            max(times) if times else float(self.predicted_batch_s), written, self.outside_window,
                            time.time())
        with self.session(context) as (client, writer):
            roll = Roll(client, writer, act, self.settings(), lambda b: b.save(folder.root / PROGRESS), self.log,
                        describe=command)
            try:
                book = roll_all(roll, book, before_batch)
            except RollStopped as exc:      # the engine's words, plus how to resume here
                raise type(exc)(f"{exc}. {RESUME}") from exc
        return {"outcome": outcome(book)}

    def resume_in_window(self, context: Any, event: Any = None) -> dict:
        """The awaited maintenance window has opened: decide again, then go on."""
        note_resumed(self.folder(context), time.time())
        return self.execute(context)


class RestartReportOperator(OutcomeReportOperator):
    """The roll's part of the outcome contract: each broker's timeline as its sections, the broker
    and gate it stopped at as the cause, how to resume as what to do next."""

    def facts(self, context: Any, folder: RunFolder) -> Facts:
        approvals = (f"approval_{APPROVAL}.json",)
        if not (folder.root / PLAN).is_file():
            return Facts(what="Rolling restart", approvals=approvals,
                         details_md="No plan was made (the plan step failed): no broker was restarted.")
        plan = load_plan(folder)
        book = load_book(folder, plan)
        stopped = next((b for b in book.batches if b.message and b.state is not BatchState.PLANNED), None)
        done = sum(1 for b in book.batches if b.state is BatchState.DONE)
        return Facts(what=f"Rolling restart — broker(s) {', '.join(map(str, plan.brokers))}", approvals=approvals,
                     summary=outcome(book), details_md=report_md(plan, book),
                     cause=stopped.message if stopped is not None else "",
                     stopped=stopped is not None and bool(stopped.stopped_at),
                     unfinished="" if book.all_done or self.is_dry_run or done == 0 else
                     f"the roll ended with {done} of {len(book.batches)} batch(es) done",
                     next_step=RESUME + " once the cause is fixed." if stopped is not None else "",
                     history=tuple(f"broker(s) {', '.join(b.items)}: {b.outages} ZooKeeper outage(s) ridden out, "
                                   "the roll went on from the gate it was at" for b in book.batches if b.outages))
