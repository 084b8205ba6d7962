"""The end of every runbook, on Airflow: fill the outcome contract, then say it (note, notification, report, links).

Whatever machine ran the run (the reassignment skeleton, the batch machine, the roll, the single-change
and health runbooks), its final-report step hands :func:`finish_run` its :class:`Facts` (what it is,
its summary and report sections, its own sentence for a stop); :func:`finish_run` adds what every run
has — the approval records, the failures the steps recorded (:func:`record_failure`, every task's
failure callback), the audit's write count, the pauses and retries — and judges the outcome
(:func:`procedures.outcome.contract.judge`), saves ``outcome.json`` and writes ``final_report.md`` /
``.html`` from it. :class:`OutcomeNotifyOperator`, the last task of every runbook, reads it back and
renders the DAG-run note and the ``finished`` / ``failed`` notification from it, then ends the run
in its state. :data:`OUTCOME_LINKS` are the final-report task's buttons.

Failure: :func:`record_failure` never raises (a callback must not hide the failure it records); the
notify step raises :class:`~operators.errors.RunRejected` (rejected, expired) or
:class:`~operators.errors.RunFailed` (every other outcome but success) naming the cause, so the run
fails; with no ``outcome.json`` (the report step itself failed) it fills the contract from what it
finds.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from kafka_zk.audit import AuditLog, utc_now_iso
from procedures.run_folder import RunFolder
from operators.errors import RunFailed, RunRejected
from operators.notifications.message import Notification
from operators.notifications.runbook import conn_ids_of, deliver
from procedures.reports.failures import upstream_failures
from procedures.reports.history import history_lines, record_retry
from operators.notifications.pages import run_page
from operators.reports.links import FinalReportLink, PlanReportLink, ProgressLink, RunReportsLink
from operators.reports.run_notes import push_run_note
from procedures.reports.titles import heading
from operators.base import RunbookOperator
from procedures.outcome.contract import Outcome, StepFailure, append_failure, judge, next_step, read_failures
from procedures.outcome import render

log = logging.getLogger(__name__)
ZK_OPS = ("create", "set", "delete")      # audit records of ZooKeeper writes (not approval files)
#: the buttons of every final-report task's page
OUTCOME_LINKS = (FinalReportLink(), PlanReportLink(), ProgressLink(), RunReportsLink())
#: report files a run may have, and their label in the reports' link lists
KNOWN_PAGES = {"plan report": "plan_report.html", "rehearsal report": "rehearsal_report.html",
               "rehearsal report (Markdown)": "rehearsal_report.md"}


@dataclass(frozen=True)
class Facts:
    """What a runbook's final-report step says of its run (the rest :func:`finish_run` finds itself).

    ``cause``: the machine's own sentence for its failure (e.g. the broker and gate a roll stopped
    at); ``stopped``: that failure is a stop on purpose, resumable; ``unfinished``: the sentence
    for work left undone while no step failed; ``approvals``: the approval records' file names;
    ``history``: lines beyond pauses and retries (e.g. outages ridden out); ``plan_md``: what the
    run asked to approve, as the plan report of a runbook whose plan step writes none (so the final
    report's "Plan report" button has a page)."""

    what: str = ""
    summary: str = ""
    details_md: str = ""
    details_html: str = ""
    cause: str = ""
    stopped: bool = False
    unfinished: str = ""
    next_step: str = ""
    approvals: Sequence[str] = ("approval.json",)
    history: Sequence[str] = ()
    pages: Mapping[str, str] = field(default_factory=dict)
    plan_md: str = ""


def record_failure(context: Mapping[str, Any]) -> None:
    """The failure callback of every runbook task: the step, the error's class and message, in
    the run folder's ``failures.jsonl`` (what the outcome's cause is made of)."""
    try:
        params, ti = context.get("params") or {}, context.get("ti")
        root = params.get("run_root") if hasattr(params, "get") else None
        error = context.get("exception")
        if not root or context.get("dag") is None or ti is None:
            return
        folder = RunFolder.for_run(str(root), context["dag"].dag_id, context["run_id"]).ensure()
        classes = tuple(c.__name__ for c in type(error).__mro__) if error is not None else ()
        append_failure(folder.root, StepFailure(ti.task_id, type(error).__name__ if error is not None else "unknown",
                                                str(error) if error is not None else "", classes, utc_now_iso()))
    except Exception:  # noqa: BLE001 - the callback must not hide the failure it records
        log.exception("could not record the failure of %s", getattr(context.get("ti"), "task_id", "?"))


def before_the_tail(context: Mapping[str, Any]) -> None:
    """The ``pre_execute`` of a run's final report and notify: only the retry noted. They must run
    on a run whose first task refused its conf or a Param (the refusal is what they report), so they
    do not check them again as every other task does (:func:`operators.runbook_dag.before_each_task`)."""
    record_retry(context)


def ends_the_run(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The arguments of a final-report or notify task: run whatever happened, and :func:`before_the_tail`."""
    kwargs.setdefault("trigger_rule", "all_done")
    kwargs["pre_execute"] = before_the_tail
    return kwargs


def _writes(folder: RunFolder) -> tuple[int, int]:
    records = AuditLog.read(folder.audit) if folder.audit.is_file() else []
    return (sum(1 for r in records if not r.dry_run and r.op in ZK_OPS),
            sum(1 for r in records if r.dry_run and r.op in ZK_OPS))


def _what(folder: RunFolder, dag_id: str) -> str:
    head = heading(folder, dag_id, [])
    return head["what"] + (f" — {head['subject']}" if head.get("subject") else "")


def fill(context: Mapping[str, Any], folder: RunFolder, facts: Facts, dry_run: bool) -> Outcome:
    """The run's outcome contract from ``facts`` and what every run leaves (see the module docstring)."""
    dag_id, run_id = context["dag"].dag_id, context["run_id"]
    own = {context["ti"].task_id, "notify"}
    failed_steps = [t for t in upstream_failures(context) if t not in own]
    written, planned = _writes(folder)
    approvals = [folder.read_json(folder.root / name) for name in facts.approvals]
    kind, cause = judge(approvals=approvals, failures=read_failures(folder.root), failed_steps=failed_steps,
                        written=written, cause=facts.cause, stopped=facts.stopped, unfinished=facts.unfinished)
    pages = {"final report": "final_report.html"}
    pages.update({label: name for label, name in KNOWN_PAGES.items() if (folder.root / name).is_file()})
    pages.update(facts.pages)
    pages.update({"live progress": "progress", "all reports of this run": "./"})
    return Outcome(dag_id=dag_id, run_id=run_id, what=facts.what or _what(folder, dag_id), kind=kind, cause=cause,
                   written=written, planned=planned, dry_run=dry_run,
                   next_step=next_step(kind, facts.next_step if kind != "success" or not cause else ""),
                   reports=pages, summary=facts.summary,
                   history=tuple(history_lines(folder)) + tuple(facts.history),
                   failed_steps=tuple(failed_steps), details_md=facts.details_md, details_html=facts.details_html)


def write_outcome(folder: RunFolder, outcome: Outcome) -> Outcome:
    """Save the contract and the final report rendered from it."""
    outcome.save(folder.root)
    folder.write_text(folder.final_report_md, render.report_md(outcome))
    folder.write_text(folder.final_report_html, render.report_html(outcome))
    return outcome


def finish_run(context: Mapping[str, Any], folder: RunFolder, facts: Facts, dry_run: bool) -> Outcome:
    """Fill the contract, save it and write the final report from it (the final-report steps' end)."""
    if facts.plan_md.strip() and not folder.plan_report_html.is_file():
        folder.write_text(folder.plan_report_md, facts.plan_md)
        folder.write_text(folder.plan_report_html, render.markdown_page(f"{facts.what}: plan", facts.plan_md))
    return write_outcome(folder, fill(context, folder, facts, dry_run))


def notification(outcome: Outcome) -> Notification:
    """The ``finished`` / ``failed`` notification of the contract, the final report linked once, by URL."""
    said = render.message(outcome)
    return Notification(event=said["event"], dag_id=outcome.dag_id, run_id=outcome.run_id, title=said["title"],
                        body=said["body"], link=run_page(outcome.dag_id, outcome.run_id, "final_report.html"))


class OutcomeReportOperator(RunbookOperator):
    """A final-report step: :meth:`facts` (a runbook's own), then :func:`finish_run`; never fails
    the run itself (the notify step does, from the contract)."""

    operator_extra_links = OUTCOME_LINKS
    ui_color = "#f3e5f5"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**ends_the_run(kwargs))

    def facts(self, context: Any, folder: RunFolder) -> Facts:
        return Facts()

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        outcome = finish_run(context, folder, self.facts(context, folder), self.is_dry_run)
        self.log.info("final report (%s: %s): %s", outcome.kind, outcome.cause, folder.final_report_md)
        return {"outcome": outcome.kind, "cause": outcome.cause, "report": str(folder.final_report_md)}


class OutcomeNotifyOperator(RunbookOperator):
    """The last task of every runbook: the note and the ``finished`` / ``failed`` notification from
    the run's outcome contract; fails the run unless it succeeded (see the module docstring).
    ``deliver``: send to ``notify_conn_ids`` (off for runbooks whose channels are someone else's)."""

    ui_color = "#f3e5f5"
    failure = RunFailed

    def __init__(self, *, deliver: bool = True, **kwargs: Any) -> None:
        super().__init__(**ends_the_run(kwargs))
        self.deliver = deliver

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        outcome = Outcome.load(folder.root)
        if outcome is None:           # the report step failed before it filled the contract
            outcome = finish_run(context, folder, Facts(), self.is_dry_run)
        push_run_note(context, render.note(outcome))
        note = notification(outcome)
        folder.write_text(folder.notification, note.text())
        if self.deliver:
            deliver(note, folder, conn_ids_of(context), context, self.log)
        if outcome.kind in ("rejected", "expired"):
            raise RunRejected(f"{outcome.headline}: {outcome.cause}; {outcome.written_text}; "
                              f"see {folder.final_report_md}")
        if not outcome.ok:
            raise self.failure(f"{outcome.headline}: {outcome.cause}; {outcome.written_text}; "
                               f"see {folder.final_report_md}")
        return {"outcome": outcome.kind}
