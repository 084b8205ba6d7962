"""The ``rehearse`` step of every data-moving runbook: between the plan report and the approval.

:class:`RehearseOperator` rehearses the run's exact plan (its ``plan/`` folder, hash-checked) on
an emulated copy seeded from the run's own ``snapshot.jsonl``, ``sizes.jsonl`` and
``capacity.json``, with the run's throttle, wave timeout, stall timeout, ``between_windows`` and
``outside_window`` Params and the configured maintenance-windows file for this cluster and
runbook. The rehearsal itself composes the executor with the emulator, which ``operators`` may not
import: this step launches ``python -m cli.main rehearse`` (:mod:`cli.rehearsal_run`) as a child
process (:class:`procedures.child_process.ChildJob`: its output in the task log, killed after
``timeout_s``, :data:`REHEARSAL_TIMEOUT_S` by default) and reads back its ``rehearsal.json``
(:func:`procedures.rehearsal.report.read_report`). Nothing is written to the cluster the run names: the
copy lives on a private ZooKeeper this step starts on 127.0.0.1 (Java and Debian's
``zookeeper`` package on the worker), or on a fresh chroot of the ZooKeeper named by
``$KAFKA_RUNBOOKS_REHEARSAL_ZOOKEEPER`` (host:port of a server kept for rehearsals).

The ``rehearse`` Param: ``auto`` (default) rehearses when the cluster has at most
:data:`AUTO_MAX_PARTITIONS` partitions and the plan at most :data:`AUTO_MAX_MOVES` partition
moves (what BENCHMARKS.md measured as affordable: see the constants), ``on`` always, ``off`` never. The step returns
``approval_line``, which the approval body shows: the rehearsal's headline and where its report
is (``rehearsal_report.html``, the page the link opens, and ``rehearsal_report.md`` in the run folder; ``rehearsal/`` holds the rehearsal's own
``waves.json``, ``windows.json`` and audit of its writes to the copy).

Failure: bad inputs (a plan edited since its hash, an unreadable snapshot) fail the step before
anything starts, as they would fail the approval (:class:`InvalidInput` with the rehearsal's
``Error:`` line when the child refused them); a rehearsal still running after ``timeout_s`` is
killed (:class:`procedures.child_process.ChildTimedOut`); a rehearsal that finds problems does *not*
fail the step — its problems are what the approver reads, and ``require_rehearsal`` in a
windows policy then keeps the run from being pre-approved.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Sequence

from kafka_zk.errors import InvalidInput
from procedures.run_folder import RunFolder
from formats.snapshot_file import load_snapshot
from kafka_zk.validation import check_brokers_to_remove
from operators.approval.step import plan_size
from operators.base import RunbookOperator, as_bool
from procedures.child_process import ChildJob
from procedures.throttles import resolve_rate
from procedures.rehearsal.report import FILE as REPORT_FILE, RehearsalReport, read_report
from operators.notifications.pages import report_link
from operators.reports.links import PlanReportLink, RunPageLink
from procedures.outcome.render import markdown_page
from operators.windows.config import configured_windows_path
from procedures.windows.spec import load_windows_file

#: BENCHMARKS.md, "Rehearsals": a rehearsal's wall time follows the moves, not the partitions.
#: Above 5,000 partitions only the plan's partitions are created in the copy (the rest are each
#: broker's disk baseline; cli/rehearsal_run.py), so the partitions cost only the reading of the
#: snapshot and the seed (11 s at 100,000): 100,000 partitions. The moves (2026-11-27 06:05 UTC, quiet
#: machine, per-class replication progress): one wave of 2,156 moves took 92 s of wall (64 CPU s +
#: ZooKeeper 27 s), one wave of 5,526 moves (the 100,000-partition plan) 323 s (259 CPU s + ZooKeeper
#: 75 s) — 11x inside REHEARSAL_TIMEOUT_S; the cost still grows faster than the moves copying at once
#: (~moves^1.5), so a plan above 6,000 moves is rehearsed only when asked (rehearse=on). Nothing is
#: sampled: a rehearsal always runs the whole plan.
AUTO_MAX_PARTITIONS = 100_000
AUTO_MAX_MOVES = 6_000
ZOOKEEPER_ENV = "KAFKA_RUNBOOKS_REHEARSAL_ZOOKEEPER"
REPORT_NAME = "rehearsal_report.md"
REPORT_HTML = "rehearsal_report.html"     # the same report as a page (procedures.outcome.render.markdown_page)
#: the longest a rehearsal may run (wall): the auto bounds above took 5.4 min quiet, 16.7 min at a load of ~25 before
REHEARSAL_TIMEOUT_S = 3600


def rehearse_param():
    from airflow.sdk import Param

    return Param("auto", type="string", enum=["auto", "on", "off"],
                 description="Rehearse the exact plan on an emulated copy of the cluster (seeded from this run's "
                             "snapshot and sizes) before the approval, and show its headline in the approval: "
                             f"auto = when the cluster has at most {AUTO_MAX_PARTITIONS:,} partitions and the plan "
                             f"at most {AUTO_MAX_MOVES:,} moves; on; off")


def should_rehearse(mode: str, partitions: int, moves: int) -> tuple[bool, str]:
    """Whether to rehearse, and why not when not."""
    mode = str(mode or "auto").strip().lower()
    if mode not in ("auto", "on", "off"):
        raise InvalidInput(f"rehearse={mode!r}: use auto, on or off")
    if mode == "off":
        return False, "rehearse=off"
    if moves == 0:
        return False, "the plan moves nothing"
    if mode == "auto" and (partitions > AUTO_MAX_PARTITIONS or moves > AUTO_MAX_MOVES):
        return False, (f"rehearse=auto: {partitions:,} partitions / {moves:,} moves is above what a rehearsal "
                       f"takes in minutes ({AUTO_MAX_PARTITIONS:,} / {AUTO_MAX_MOVES:,}); set rehearse=on to rehearse "
                       "anyway (BENCHMARKS.md has the times)")
    return True, ""


class RehearsalReportLink(RunPageLink):
    name = "Rehearsal report"
    page = REPORT_HTML


class RehearseOperator(RunbookOperator):
    """Rehearse the run's plan on an emulated copy; return the approval's rehearsal line."""

    operator_extra_links = (RehearsalReportLink(), PlanReportLink())

    template_fields: Sequence[str] = (*RunbookOperator.template_fields, "rehearse", "throttle_bytes_per_sec",
                                      "wave_timeout_s", "stall_timeout_s", "between_windows", "outside_window",
                                      "demote", "poll_interval_s")
    ui_color = "#fce5cd"

    def __init__(self, *, rehearse: Any = "auto", throttle_bytes_per_sec: Any = None, wave_timeout_s: Any = 21600,
                 stall_timeout_s: Any = None, between_windows: Any = "keep", outside_window: Any = False,
                 demote: Any = (), timeout_s: Any = REHEARSAL_TIMEOUT_S, poll_interval_s: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.timeout_s = timeout_s
        self.rehearse = rehearse
        self.throttle_bytes_per_sec = throttle_bytes_per_sec
        self.wave_timeout_s = wave_timeout_s
        self.stall_timeout_s = stall_timeout_s
        self.between_windows = between_windows
        self.outside_window = outside_window
        self.demote = demote      # the brokers the runbook's demote step moves leadership off (decommission)
        self.poll_interval_s = poll_interval_s   # the run's executor poll: the rehearsal's gaps between waves

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        moves, _ = plan_size(folder)
        snapshot = load_snapshot(str(folder.snapshot))
        go, why = should_rehearse(self.rehearse, snapshot.partition_count, moves)
        if not go:
            self.log.info("not rehearsed: %s", why)
            return {"rehearsed": False, "approval_line": f"Not rehearsed: {why}."}
        dag_id, run_id = context["dag"].dag_id, context["run_id"]
        out = folder.root / "rehearsal"
        report = self._run_rehearsal(self.rehearsal_args(folder, dag_id, out), out)
        shutil.copyfile(out / "rehearsal.md", folder.root / REPORT_NAME)
        (folder.root / REPORT_HTML).write_text(markdown_page(f"Rehearsal — {dag_id} {run_id}",
                                                             (out / "rehearsal.md").read_text(encoding="utf-8")),
                                               encoding="utf-8")
        self.log.info("%s (report: %s)", report.headline(), folder.root / REPORT_HTML)
        for problem in report.problems:
            self.log.warning("rehearsal problem: %s", problem)
        link = report_link(dag_id, run_id, REPORT_HTML)
        where = f"[rehearsal report]({link})" if link else f"rehearsal report: `{folder.root / REPORT_HTML}`"
        line = f"**{report.headline()}** — {where}"
        if report.problems:
            line += "\n\n" + "\n".join(f"- rehearsal problem: {p}" for p in report.problems[:5])
        return {"rehearsed": True, "passed": report.passed, "plan_hash": report.plan_hash,
                "headline": report.headline(), "approval_line": line}

    def rehearsal_args(self, folder: RunFolder, dag_id: str, out: Path) -> list[str]:
        """``kafka-runbook rehearse`` for this run: its snapshot, sizes, capacity and plan, the
        configured windows file, and this step's Params (each checked here, naming the Param)."""
        args = ["--snapshot", str(folder.snapshot), "--plan-dir", str(folder.plan_dir), "--out", str(out),
                "--cluster", str(self.zk_conn_id), "--runbook", dag_id,
                "--wave-timeout", repr(float(self.wave_timeout_s)), "--between-windows", str(self.between_windows)]
        if folder.partition_sizes.is_file():
            args += ["--sizes", str(folder.partition_sizes)]
        if folder.capacity.is_file():
            args += ["--capacity", str(folder.capacity)]
        windows = configured_windows_path(in_task=True)
        if windows is not None:
            load_windows_file(windows)          # a configured file that is broken fails here, as it fails the run
            args += ["--windows", windows]
        if self.throttle_bytes_per_sec not in (None, "", "None"):
            args += ["--throttle", str(resolve_rate(self.throttle_bytes_per_sec, None))]
        if self.stall_timeout_s not in (None, "", "None"):
            args += ["--stall-timeout", repr(float(self.stall_timeout_s))]
        if self.poll_interval_s not in (None, "", "None"):
            poll = float(self.poll_interval_s)
            if not poll > 0:
                raise InvalidInput(f"poll_interval_s={self.poll_interval_s!r} must be > 0 seconds")
            args += ["--poll-interval", repr(poll)]
        if as_bool(self.outside_window):
            args.append("--outside-window")
        if self.demote:
            args += ["--demote", ",".join(str(b) for b in check_brokers_to_remove(self.demote, "demote"))]
        zookeeper = os.environ.get(ZOOKEEPER_ENV)
        if zookeeper:
            args += ["--zookeeper", zookeeper]
        return args

    def _run_rehearsal(self, args: list[str], out: Path) -> RehearsalReport:
        """Launch the rehearsal as a child process (bounded by ``timeout_s``, its output in this task's
        log) and read back its report; an input it refused fails the step with its ``Error:`` line."""
        (out / REPORT_FILE).unlink(missing_ok=True)     # what is read back is this rehearsal's, or nothing
        self._job = ChildJob(["-m", "cli.main", "rehearse", *args], self.log, "rehearsal")
        code = self._job.run(float(self.timeout_s))
        if code not in (0, 1) or not (out / REPORT_FILE).is_file():
            why = "; ".join(self._job.error_lines()) or "see its output above"
            raise InvalidInput(f"the rehearsal could not run (exit code {code}): {why}")
        return read_report(out)

    def on_kill(self) -> None:
        job = getattr(self, "_job", None)
        if job is not None:
            job.terminate()
