"""The ``rehearse`` step of every data-moving runbook: between the plan report and the approval.

:class:`RehearseOperator` rehearses the run's exact plan (its ``plan/`` folder, hash-checked) on
an emulated copy seeded from the run's own ``snapshot.jsonl``, ``sizes.jsonl`` and
``capacity.json``, with the run's throttle, wave timeout, stall timeout, ``between_windows`` and
``outside_window`` Params and the configured maintenance-windows file for this cluster and
runbook (:mod:`operators.rehearsal.run`). Nothing is written to the cluster the run names: the
copy lives on a private ZooKeeper this step starts on 127.0.0.1 (Java and Debian's
``zookeeper`` package on the worker), or on a fresh chroot of the ZooKeeper named by
``$KAFKA_RUNBOOKS_REHEARSAL_ZOOKEEPER`` (host:port of a server kept for rehearsals).

The ``rehearse`` Param: ``auto`` (default) rehearses when the cluster has at most
:data:`AUTO_MAX_PARTITIONS` partitions and the plan at most :data:`AUTO_MAX_MOVES` partition
moves (what BENCHMARKS.md measured as affordable), ``on`` always, ``off`` never. The step returns
``approval_line``, which the approval body shows: the rehearsal's headline and where its report
is (``rehearsal_report.md`` in the run folder; ``rehearsal/`` holds the rehearsal's own
``waves.json``, ``windows.json`` and audit of its writes to the copy).

Failure: bad inputs (a plan edited since its hash, an unreadable snapshot) fail the step before
anything starts, as they would fail the approval; a rehearsal that finds problems does *not*
fail the step — its problems are what the approver reads, and ``require_rehearsal`` in a
windows policy then keeps the run from being pre-approved.
"""

from __future__ import annotations

import os
import shutil
from typing import Any, Sequence

from kafka_zk.errors import InvalidInput
from kafka_zk.snapshot_file import load_snapshot
from kafka_zk.validation import check_brokers_to_remove
from operators.approval.step import plan_size
from operators.base import RunbookOperator, as_bool
from operators.reassignment.throttles import resolve_rate
from operators.rehearsal.run import RehearsalInput, rehearse
from operators.reports.links import report_link
from operators.windows.config import configured_windows

AUTO_MAX_PARTITIONS = 5_000     # BENCHMARKS.md, "Rehearsals": the demo cluster (3,000 partitions,
AUTO_MAX_MOVES = 3_000          # 2,204 moves) took 6.4 min under a load of 33 on 2 cores
ZOOKEEPER_ENV = "KAFKA_RUNBOOKS_REHEARSAL_ZOOKEEPER"
REPORT_NAME = "rehearsal_report.md"


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


class RehearseOperator(RunbookOperator):
    """Rehearse the run's plan on an emulated copy; return the approval's rehearsal line."""

    template_fields: Sequence[str] = (*RunbookOperator.template_fields, "rehearse", "throttle_bytes_per_sec",
                                      "wave_timeout_s", "stall_timeout_s", "between_windows", "outside_window", "demote")
    ui_color = "#fce5cd"

    def __init__(self, *, rehearse: Any = "auto", throttle_bytes_per_sec: Any = None, wave_timeout_s: Any = 21600,
                 stall_timeout_s: Any = None, between_windows: Any = "keep", outside_window: Any = False,
                 demote: Any = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rehearse = rehearse
        self.throttle_bytes_per_sec = throttle_bytes_per_sec
        self.wave_timeout_s = wave_timeout_s
        self.stall_timeout_s = stall_timeout_s
        self.between_windows = between_windows
        self.outside_window = outside_window
        self.demote = demote      # the brokers the runbook's demote step moves leadership off (decommission)

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        moves, _ = plan_size(folder)
        snapshot = load_snapshot(str(folder.snapshot))
        go, why = should_rehearse(self.rehearse, snapshot.partition_count, moves)
        if not go:
            self.log.info("not rehearsed: %s", why)
            return {"rehearsed": False, "approval_line": f"Not rehearsed: {why}."}
        dag_id, run_id = context["dag"].dag_id, context["run_id"]
        stall = None if self.stall_timeout_s in (None, "", "None") else float(self.stall_timeout_s)
        inp = RehearsalInput(
            snapshot=str(folder.snapshot), plan_dir=str(folder.plan_dir), out_dir=str(folder.root / "rehearsal"),
            sizes=str(folder.partition_sizes) if folder.partition_sizes.is_file() else None,
            capacity=str(folder.capacity) if folder.capacity.is_file() else None,
            windows=configured_windows(in_task=True), cluster=str(self.zk_conn_id), runbook=dag_id,
            throttle_bytes_per_s=resolve_rate(self.throttle_bytes_per_sec, None)
            if self.throttle_bytes_per_sec not in (None, "", "None") else None,
            wave_timeout_s=float(self.wave_timeout_s), **({} if stall is None else {"stall_timeout_s": stall}),
            between_windows=str(self.between_windows), outside_window=as_bool(self.outside_window),
            demote=tuple(check_brokers_to_remove(self.demote, "demote")) if self.demote else ())
        report = rehearse(inp, zookeeper=os.environ.get(ZOOKEEPER_ENV) or None)
        shutil.copyfile(folder.root / "rehearsal" / "rehearsal.md", folder.root / REPORT_NAME)
        self.log.info("%s (report: %s)", report.headline(), folder.root / REPORT_NAME)
        for problem in report.problems:
            self.log.warning("rehearsal problem: %s", problem)
        link = report_link(dag_id, run_id, REPORT_NAME)
        where = f"[rehearsal report]({link})" if link else f"rehearsal report: `{folder.root / REPORT_NAME}`"
        line = f"**{report.headline()}** — {where}"
        if report.problems:
            line += "\n\n" + "\n".join(f"- rehearsal problem: {p}" for p in report.problems[:5])
        return {"rehearsed": True, "passed": report.passed, "plan_hash": report.plan_hash,
                "headline": report.headline(), "approval_line": line}
