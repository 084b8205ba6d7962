"""The reassignment skeleton's reports: the plan report, and its sections of the final report.

Prose lives in ``templates/`` (Jinja2); this module gathers the data from the run folder (the
planner's ``summary.json`` and ``waves.json``, ``approval.json``, ``guards.json``, ``waves.json``
progress, ``verify.json``, the audit log) and renders. Charts are inline SVG bars per broker,
before and after (replicas, and bytes when sizes were given).

* **RenderPlanReportOperator** writes ``plan_report.md`` / ``.html`` and returns the approval
  body (Markdown with the plan hash) for the approve step.
* **FinalReportOperator** (runs whatever happened upstream) fills the outcome contract with the
  waves, checks and charts as its sections (:mod:`operators.reports.outcome` writes
  ``final_report.md`` / ``.html`` from it; the shared notify step ends the run from it).
* **PreviewFinalReportOperator**: the same for the batch runbooks' preview and final reports.

Failure: a missing template raises jinja2's ``TemplateNotFound`` naming it; missing run-folder
files are reported as "not run" rather than failing the report.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

import jinja2

from kafka_zk import paths
from kafka_zk.audit import AuditLog
from kafka_zk.model import ClusterSnapshot
from planning.wave_time import Estimate, WaveCosts, estimate
from procedures.run_folder import RunFolder
from kafka_zk.snapshot import read_snapshot
from formats.snapshot_file import load_snapshot
from operators.base import DecommissionStep, RunbookOperator
from operators.hooks.zookeeper import ZooKeeperHook
from procedures.plan.retiring import excluded_lines
from procedures.waves.book import WaveBook, human_bytes
from procedures.reports.failures import upstream_failures
from procedures.reports.history import history_lines
from operators.reports.outcome import OUTCOME_LINKS, Facts, OutcomeReportOperator, ends_the_run, finish_run
from operators.notifications.pages import report_link
from operators.reports.links import PlanReportLink, RunReportsLink
from procedures.reports.locations import TEMPLATES
from planning.dead_brokers import statement_lines
from operators.reports.run_notes import approval_words
from procedures.outcome.contract import approval_outcome
from procedures.reports.state_change import read_excerpts
from procedures.reports.titles import heading
from procedures.windows.guard import predicted_wave_seconds
from operators.runtime import plan_hash

BAR_PX = 300


def render(name: str, **values: Any) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=name.endswith(".html.j2"),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.get_template(name).render(**values)


def seconds_text(s: float | None) -> str:
    if s is None:
        return "unknown"
    s = float(s)
    if s < 10:
        return f"{s:.1f}s"
    if s < 120:
        return f"{s:.0f}s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def chart(title: str, rows: Sequence[tuple[int, bool, float, float]], fmt=str) -> dict:
    """Bars for ``(broker, removed, before, after)`` rows, scaled to the largest value."""
    top = max([max(b, a) for _, _, b, a in rows] + [1])
    return {"title": title, "rows": [
        {"broker": br, "removed": rm, "w_before": round(BAR_PX * b / top, 1), "w_after": round(BAR_PX * a / top, 1),
         "before_text": fmt(b), "after_text": fmt(a)} for br, rm, b, a in rows]}


def plan_values(folder: RunFolder, context: Mapping[str, Any], dry_run: bool, throttle: Any) -> dict:
    """Everything the plan report and the approval body show."""
    summary = json.loads((folder.plan_dir / "summary.json").read_text(encoding="utf-8"))
    waves_doc = json.loads((folder.plan_dir / "waves.json").read_text(encoding="utf-8"))
    removed = [int(b) for b in summary.get("removed_brokers", [])]
    brokers = []
    for key, b in sorted(summary["brokers"].items(), key=lambda kv: int(kv[0])):
        bid = int(key)
        brokers.append({"id": bid, "rack": b.get("rack"), "removed": bid in removed, "down": b.get("live") is False,
                        "before": b["before"],
                        "after": b["after"], "before_bytes": human_bytes(b["before"]["bytes"]),
                        "after_bytes": human_bytes(b["after"]["bytes"]), "changed": b["before"] != b["after"]})
    charts = [chart("Replicas per broker", [(b["id"], b["removed"], b["before"]["replicas"], b["after"]["replicas"])
                                           for b in brokers])]
    if summary.get("sized"):
        charts.append(chart("Bytes per broker", [(b["id"], b["removed"], b["before"]["bytes"], b["after"]["bytes"])
                                                for b in brokers], human_bytes))
    disk = disk_values(summary, brokers)
    per_disk = (summary.get("disk") or {}).get("brokers") or {}
    if disk["known"]:
        charts.append(chart("Disk used, % of capacity (after = peak)",
                            [(b["id"], b["removed"], per_disk.get(str(b["id"]), {}).get("pct_before") or 0,
                              per_disk.get(str(b["id"]), {}).get("pct_peak") or 0) for b in brokers],
                            lambda v: f"{v:g} %"))
    rate = throttle if throttle not in (None, "") else summary.get("limits", {}).get("throttle_bytes_per_s")
    sized = bool(summary.get("sized"))
    run_time = run_estimate(waves_doc["waves"], summary, rate, (context.get("params") or {}).get("poll_interval_s"))
    return {
        "excluded": excluded_lines(folder, removed),
        "dead_lines": statement_lines(summary),
        "sized": sized,
        "bytes_text": human_bytes(summary.get("bytes_moved", 0)) if sized else "unknown (no sizes_file given)",
        "predicted_text": run_time.text() if sized else
        "unknown (without partition sizes no duration can be predicted)",
        "estimate": run_time,
        "s": summary, "removed": removed, "brokers": brokers, "charts": charts, "disk": disk,
        **heading(folder, context["dag"].dag_id, removed),
        "plan_hash": (folder.plan_dir / "plan.sha256").read_text(encoding="ascii").strip(),
        "run_id": context["run_id"], "dag_id": context["dag"].dag_id, "dry_run": dry_run,
        "bytes_moved": human_bytes(summary.get("bytes_moved", 0)),
        "throttle": f"{human_bytes(int(rate))}/s" if rate else "none",
        "predicted": seconds_text(summary.get("predicted_seconds")),
        "lower_bound": seconds_text(summary.get("lower_bound_seconds")),
        "waves": [{"index": w["index"], "partitions": len(w["partitions"]), "bytes": human_bytes(w["bytes"]),
                   "busiest_broker": w.get("busiest_broker"), "predicted": seconds_text(w.get("predicted_seconds"))}
                  for w in waves_doc["waves"]],
    }


def run_estimate(waves: Sequence[Mapping[str, Any]], summary: Mapping[str, Any], rate: Any, poll_s: Any) -> Estimate:
    """The run's duration in its parts (planning/wave_time.py): each wave's copy time at the run's
    throttle, the controller's fixed cost per wave, the executor's gaps at this run's poll interval."""
    planned = (summary.get("limits") or {}).get("throttle_bytes_per_s")
    copies = [predicted_wave_seconds(w.get("predicted_seconds"), planned, _int_or_none(rate), 1.0) for w in waves]
    try:
        costs = WaveCosts(poll_s=float(poll_s)) if poll_s not in (None, "") else WaveCosts()
    except (TypeError, ValueError):
        costs = WaveCosts()
    return estimate(copies, costs)


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


def _pct(value: Any) -> str:
    return "-" if value is None else f"{value:g} %"


def disk_values(summary: Mapping[str, Any], brokers: Sequence[Mapping[str, Any]]) -> dict:
    """The plan's disk section for the reports: per broker capacity and % full, the headline."""
    disk = summary.get("disk") or {}
    per = disk.get("brokers") or {}
    rows = []
    for b in brokers:
        d = per.get(str(b["id"])) or {}
        rows.append({"id": b["id"], "removed": b["removed"],
                     "capacity": human_bytes(d["capacity"]) if d.get("capacity") else "unknown",
                     "before": _pct(d.get("pct_before")), "peak": _pct(d.get("pct_peak")),
                     "after": _pct(d.get("pct_after")),
                     "over": d.get("limit") is not None and d.get("peak", 0) > d["limit"]})
    status = disk.get("status") or "capacity unknown: disk usage after the move not checked"
    if disk.get("worst_broker") is not None:
        headline = (f"fullest broker {disk['worst_broker']} peaks at {disk['worst_peak_pct']:g} % of its capacity "
                    f"(threshold {disk['threshold_pct']:g} %); {status}")
    else:
        headline = status
    return {"rows": rows, "headline": headline, "known": any(r["capacity"] != "unknown" for r in rows),
            "notes": list(disk.get("growth_notes") or []), "over_before": list(disk.get("over_before") or [])}


class RenderPlanReportOperator(RunbookOperator):
    """Write the plan report (Markdown + HTML); return the approval body."""

    operator_extra_links = (PlanReportLink(), RunReportsLink())

    template_fields: Sequence[str] = (*RunbookOperator.template_fields, "throttle_bytes_per_sec")
    ui_color = "#f3e5f5"

    def __init__(self, *, throttle_bytes_per_sec: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.throttle_bytes_per_sec = throttle_bytes_per_sec

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        values = plan_values(folder, context, self.is_dry_run, self.throttle_bytes_per_sec)
        folder.write_text(folder.plan_report_md, render("plan_report.md.j2", **values))
        folder.write_text(folder.plan_report_html, render("plan_report.html.j2", **values))
        move_controller = bool((context.get("params") or {}).get("move_controller", False))
        linked = report_link(context["dag"].dag_id, context["run_id"], "plan_report.html") is not None
        body = render("approval_body.md.j2", zk=self.zk_conn_id,   # the approval adds the link; no worker path then
                      report_path=None if linked else str(folder.plan_report_html),
                      move_controller=move_controller, **values)
        self.log.info("plan report: %s (hash %s)", folder.plan_report_html, values["plan_hash"])
        return {"plan_hash": values["plan_hash"], "approval_body": body, "report": str(folder.plan_report_html)}


def throttles_text(folder: RunFolder, throttle_writes: Sequence[Any]) -> str:
    """What became of the run's throttles, including a wave left copying after a failure (the
    teardown kept them until it finished: ``throttle_janitor.json``)."""
    if not throttle_writes:
        return "none set"
    text = f"{len(throttle_writes)} config write(s); pre-run values restored by remove_throttles"
    janitor = folder.read_json(folder.throttle_janitor)
    if janitor:
        listed = janitor.get("in_flight") or []
        if janitor.get("removed_at"):
            text += (f"; kept after the failure while {len(listed)} partition(s) of this run were still copying "
                     f"({', '.join(listed[:5])}), removed when they finished")
        else:
            text += (f"; KEPT: {len(listed)} partition(s) of this run still copying ({', '.join(listed[:5])}); "
                     "remove_throttles removes them when they finish")
    return text


ZK_OPS = ("create", "set", "delete")   # audit records of ZooKeeper writes (not the approval file)


def failure_reasons(guards: Mapping[str, Any] | None, verify: Mapping[str, Any], book: WaveBook | None,
                    failures: Sequence[str], wave_failure: Mapping[str, Any] | None = None) -> list[str]:
    """Why the run failed, from what its steps left in the run folder, most decisive first
    (``wave_failure``: the executor's record of the trigger's verdict, naming the cause)."""
    reasons = []
    if guards is not None and not guards.get("ok", True):
        reasons.append("guards refused the plan: " + "; ".join(guards.get("problems", [])[:3]))
    if wave_failure:
        reasons.append(f"wave {wave_failure.get('wave_id')} {wave_failure.get('status')}: {wave_failure.get('message')}")
    for w in (book.waves if book else ()):
        if w.status == "submitted" and not (wave_failure and wave_failure.get("wave_id") == w.id):
            reasons.append(f"wave {w.id} was submitted and had not finished when the run stopped")
    for key in ("final_verify", "verify_drained"):
        v = verify.get(key)
        if v and v.get("ok") is False:
            reasons.append(f"{key} failed: " + "; ".join(v.get("problems", [])[:3]))
    return reasons


def final_values(folder: RunFolder, context: Mapping[str, Any], removed: Sequence[int], dry_run: bool,
                 reassignment_running: bool | None = None) -> dict:
    approval = folder.read_json(folder.approval)
    guards = folder.read_json(folder.guards)
    verify = folder.read_json(folder.verify) or {}
    book = WaveBook.load(folder.wave_progress)
    records = AuditLog.read(folder.audit) if folder.audit.is_file() else []
    failures = upstream_failures(context)
    approval_text = approval_words(approval)
    guards_text = "not run" if guards is None else ("passed" if guards["ok"] else "refused: " + "; ".join(guards["problems"]))

    def check(key: str) -> str:
        v = verify.get(key)
        if v is None:
            return "not run"
        if v["ok"] is None:
            return v.get("note", "skipped")
        return "passed" if v["ok"] else "FAILED: " + "; ".join(v["problems"][:5])

    waves = []
    for w in (book.waves if book else ()):
        took = seconds_text(w.done_at - w.submitted_at) if w.done_at and w.submitted_at else "-"
        waves.append({"id": w.id, "partitions": len(w.moves), "status": w.status, "took": took})
    if dry_run:
        outcome = "dry run"
    elif approval_outcome(approval) is not None:
        outcome = approval_outcome(approval)[1]
    elif failures:
        outcome = "FAILED"
    else:
        outcome = "succeeded"
    throttle_writes = [r for r in records if r.path.startswith(("/config/topics/", "/config/brokers/"))
                       and not r.dry_run]
    charts = []
    dead_lines: list[str] = []
    summary_file = folder.plan_dir / "summary.json"
    if summary_file.is_file():
        s = json.loads(summary_file.read_text(encoding="utf-8"))
        dead_lines = statement_lines(s, done=outcome == "succeeded")
        charts.append(chart("Replicas per broker (planned)", [
            (int(k), int(k) in removed, b["before"]["replicas"], b["after"]["replicas"])
            for k, b in sorted(s["brokers"].items(), key=lambda kv: int(kv[0]))]))
    return {
        "outcome": outcome, "removed": list(removed), "run_id": context["run_id"], "dag_id": context["dag"].dag_id,
        **heading(folder, context["dag"].dag_id, removed),
        "dry_run": dry_run, "plan_hash": approval.get("plan_hash") if approval else None,
        "approval_text": approval_text, "guards_text": guards_text,
        "writes": sum(1 for r in records if not r.dry_run and r.op in ZK_OPS),
        "planned_writes": sum(1 for r in records if r.dry_run and r.op in ZK_OPS),
        "reasons": (failure_reasons(guards, verify, book, failures, folder.read_json(folder.wave_failure))
                    if outcome == "FAILED" else []),
        "reassignment_running": reassignment_running,
        # what happens to a still-running wave's throttles is in throttles_text (the executor's janitor)
        "throttles_kept_note": None,
        "audit_path": str(folder.audit),
        "throttles_text": throttles_text(folder, throttle_writes),
        "waves": waves, "verify_text": check("final_verify"), "drained_text": check("verify_drained"),
        "dead_lines": dead_lines,
        # only the lines of steps this runbook has (add_brokers has no move_controller step)
        "controller_text": controller_text(folder.read_json(folder.root / "controller.json"))
        if "move_controller" in set(getattr(context.get("dag"), "task_ids", None) or ()) else None,
        "failures": failures, "charts": charts, "report_path": str(folder.final_report_html),
        "state_change_excerpts": read_excerpts(folder.root),
        "history": history_lines(folder), "refused": approval_outcome(approval) is not None and not dry_run,
    }


def reassignment_running(zk_conn_id: str, log: Any) -> bool | None:
    """Whether ``/admin/reassign_partitions`` exists now (a wave still copying), None if unreadable."""

    try:
        with ZooKeeperHook(zk_conn_id) as hook:
            return hook.get_conn().exists(paths.REASSIGN_PARTITIONS) is not None
    except Exception as exc:  # noqa: BLE001 - the report says "unknown" rather than failing
        log.warning("could not read %s for the report: %s", paths.REASSIGN_PARTITIONS, exc)
        return None
def controller_text(doc: dict | None) -> str:
    """Where the controller is, from the move_controller step's ``controller.json``."""
    if doc is None:
        return "not checked (the move_controller step did not run)"
    removed = ", ".join(map(str, doc["removed"]))
    if doc.get("dry_run") and doc["requested"]:
        return f"on broker {doc['before']}; dry run: its re-election was planned only"
    where = f"on broker {doc['after']}"
    if doc["on_removed"]:
        return (f"{where}, a REMOVED broker ({removed}): stopping it forces a controller failover; "
                "run with move_controller=true or stop it knowing that")
    if doc["attempts"]:
        return f"{where} (moved off removed broker {doc['before']} by {doc['attempts']} re-election(s))"
    return f"{where} (not a removed broker)"


class PreviewFinalReportOperator(RunbookOperator):
    """A runbook's preview (before approval) or final report from ``templates/<template_dir>/``.

    Subclasses set ``template_dir`` and implement ``report_values(context, folder) -> dict``
    holding at least ``outcome`` (``summary`` and ``cause``, the runbook's own sentence for a
    failure, optional). The preview also renders the approval body with the plan hash; the final
    report's templates are the runbook's sections of the outcome contract
    (:func:`operators.reports.outcome.finish_run`), which the notify step ends the run from.
    """

    ui_color = "#f3e5f5"
    template_dir = ""
    what = ""       # the final report's title (default: from the DAG id, procedures.reports.titles)

    def __init__(self, *, kind: str, **kwargs: Any) -> None:
        super().__init__(**(ends_the_run(kwargs) if kind == "final" else kwargs))
        if kind not in ("preview", "final"):
            raise ValueError(f"kind={kind!r} must be 'preview' or 'final'")
        self.kind = kind
        self.operator_extra_links = OUTCOME_LINKS if kind == "final" else (PlanReportLink(), RunReportsLink())

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        values = self.report_values(context, folder)
        if self.kind == "final":       # the runbook's sections of the outcome contract
            outcome = finish_run(context, folder, Facts(
                what=self.what, summary=str(values.get("summary") or ""), cause=str(values.get("cause") or ""),
                details_md=render(f"{self.template_dir}/final.md.j2", **values),
                details_html=render(f"{self.template_dir}/final.html.j2", **values)), self.is_dry_run)
            self.log.info("final report (%s: %s): %s", outcome.kind, outcome.cause, folder.final_report_md)
            return {"outcome": outcome.kind, "cause": outcome.cause, "report": str(folder.final_report_md)}
        md, html = folder.plan_report_md, folder.plan_report_html
        folder.write_text(md, render(f"{self.template_dir}/preview.md.j2", **values))
        folder.write_text(html, render(f"{self.template_dir}/preview.html.j2", **values))
        self.log.info("preview report: %s", md)
        out = {"outcome": values["outcome"], "report": str(md), "plan_hash": plan_hash(folder.plan_dir)}
        linked = report_link(context["dag"].dag_id, context["run_id"], html.name) is not None
        out["approval_body"] = render(f"{self.template_dir}/approval_body.md.j2", plan_hash=out["plan_hash"],
                                      report_path=None if linked else str(html), **values)
        return out


class FinalReportOperator(OutcomeReportOperator, DecommissionStep):
    """The reassignment skeleton's final report: its waves, checks and charts as the runbook's
    sections of the outcome contract (:mod:`operators.reports.outcome`), whatever happened upstream."""

    def facts(self, context: Any, folder: RunFolder) -> Facts:
        values = final_values(folder, context, sorted(self.removed), self.is_dry_run,
                              reassignment_running(self.zk_conn_id, self.log))
        live = self._live_chart(folder)
        if live is not None:
            values["charts"] = [live]
        waves_done = sum(1 for w in values["waves"] if w["status"] == "done")
        summary = (f"{waves_done}/{len(values['waves'])} wave(s) done; final verify: {values['verify_text']}"
                   + (f"; drained: {values['drained_text']}" if values["removed"] else ""))
        if "kept after the failure" in values["throttles_text"] or "KEPT" in values["throttles_text"]:
            summary += f"; throttles: {values['throttles_text']}"   # a failed wave's throttles, in the notice too
        return Facts(what=values["what"] + (f" — {values['subject']}" if values["subject"] else ""),
                     summary=summary, cause=values["reasons"][0] if values["reasons"] else "",
                     details_md=render("final_report.md.j2", **values),
                     details_html=render("final_report.html.j2", **values))

    def _live_chart(self, folder: RunFolder) -> dict | None:
        """Replicas per broker: the run's snapshot against the live cluster now (None if unreadable)."""
        if not folder.snapshot.is_file():
            return None
        try:
            with ZooKeeperHook(self.zk_conn_id) as hook:
                now = read_snapshot(hook.get_conn(), with_configs=False)
        except Exception as exc:  # noqa: BLE001 - a report without the live chart beats no report
            self.log.warning("live cluster not readable for the report: %s", exc)
            return None
        before = load_snapshot(str(folder.snapshot))

        def counts(snap: ClusterSnapshot) -> dict[int, int]:
            out: dict[int, int] = {}
            for p in snap.partitions():
                for b in p.replicas:
                    out[b] = out.get(b, 0) + 1
            return out
        b0, b1 = counts(before), counts(now)
        removed = self.removed
        return chart("Replicas per broker: at the snapshot vs now", [
            (b, b in removed, b0.get(b, 0), b1.get(b, 0)) for b in sorted(set(b0) | set(b1))])
