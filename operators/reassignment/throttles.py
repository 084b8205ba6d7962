"""Throttle steps: the setup that sets replication throttles and the teardown that removes them.

**SetThrottlesOperator** (a setup task) sets the leader/follower rate on every broker any wave
throttles. **apply_wave_throttles** (called by the executor before each wave) merges that wave's
throttled-replica lists into the topics. Both go through :func:`record_then_apply`: the
:class:`ThrottleRecord` of pre-run values is computed with a dry-run writer and saved to the run
folder *before* the first real write, so a task killed mid-write still leaves the record that
lets the teardown restore; a record already on disk is extended, never replaced, so a retried
task never mistakes our own throttles for the user's.

**RemoveThrottlesOperator** (the teardown: runs when anything between it and its setup failed)
restores exactly the recorded pre-run values and removes only what we added
(:func:`kafka_zk.admin.throttles.remove_throttles`), then checks nothing of ours is left.
Throttles follow the data, not the task: while ``/admin/reassign_partitions`` still lists a
partition of this run (a wave left copying by a failed or stopped ``execute_waves``: it cannot
be stopped in ZooKeeper mode), the teardown keeps every throttle, records why in the run
folder's ``throttle_janitor.json`` and defers on
:class:`operators.triggers.janitor.ReassignmentGoneTrigger`; it removes them the moment the last
such partition is no longer listed (the report and notification say so; a ``throttles_kept``
notification goes out when it starts keeping them, ``throttles_removed`` when it removes them);
once they are removed it writes ``throttles_removed.json`` (until then cluster_health reports the
run's throttles as owned by it, not leaked: :mod:`kafka_zk.health.owners`).

Failure: a non-positive rate raises :class:`InvalidInput` before any write; if ours are still
present after the removal, :class:`VerificationFailed` lists them; a wave still listed at the
janitor's deadline (``janitor_timeout_s``) raises :class:`VerificationFailed` naming the
partitions, with the throttles kept (remove them with ``kafka-runbook throttle`` once it ends).
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any, Sequence

from kafka_zk.admin.throttles import ThrottleRecord, remove_throttles, throttles_left
from kafka_zk.authority import OwnThrottlesOnly, WriteAuthority
from kafka_zk.health.owners import REMOVED_MARKER
from planning.plan_folder.read import load_plan_artifacts
from procedures.approval.policy import duration_text
from procedures.run_folder import RunFolder
from procedures.throttles import record_then_apply, resolve_rate
from operators.base import RunbookOperator
from operators.deferral import not_before
from operators.errors import VerificationFailed
from operators.notifications.runbook import notify_event
from operators.triggers.janitor import ReassignmentGoneTrigger, ours_in_flight


class SetThrottlesOperator(RunbookOperator):
    """Setup: set the replication rate on every broker the plan throttles; record what was there."""

    template_fields: Sequence[str] = (*RunbookOperator.template_fields, "throttle_bytes_per_sec")
    ui_color = "#dbe9f6"

    def __init__(self, *, throttle_bytes_per_sec: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.throttle_bytes_per_sec = throttle_bytes_per_sec

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        plan = load_plan_artifacts(str(folder.plan_dir))
        rate = resolve_rate(self.throttle_bytes_per_sec, plan.throttle_bytes_per_s)
        brokers = sorted({b for w in plan.waves for b in w.throttled_brokers})
        with self.session(context) as (_client, writer):
            record = record_then_apply(folder, writer, (), brokers, rate)
        self.log.info("throttle %d B/s on brokers %s%s; pre-run values recorded in %s", rate, brokers,
                      " (dry run: planned only)" if self.is_dry_run else "", folder.throttle_record)
        for b in record.brokers:
            kept = {k: v for k, v in b.before.items() if v is not None}
            if kept:
                self.log.info("broker %s had throttles before the run (restored at the end): %s", b.broker, kept)
        return {"rate": rate, "brokers": brokers}


class RemoveThrottlesOperator(RunbookOperator):
    """Teardown: restore the recorded pre-run throttle values, remove only ours — once no wave of
    this run is still copying (see module docstring)."""

    template_fields: Sequence[str] = (*RunbookOperator.template_fields, "janitor_timeout_s", "poll_interval_s")
    ui_color = "#dbe9f6"

    def __init__(self, *, janitor_timeout_s: Any = 7 * 24 * 3600, poll_interval_s: Any = 5.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.janitor_timeout_s = janitor_timeout_s
        self.poll_interval_s = poll_interval_s

    def write_authority(self, folder: RunFolder) -> WriteAuthority:
        """The teardown always cleans up, approved or not: only the throttles of the run's record."""
        if not folder.throttle_record.is_file():
            return OwnThrottlesOnly(frozenset(), str(folder.throttle_record))
        return ThrottleRecord.load(folder.throttle_record).teardown_authority(str(folder.throttle_record))

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        if not folder.throttle_record.is_file():
            self.log.info("no throttle record in %s: no throttle was set by this run", folder.root)
            return {"restored": []}
        if not self.is_dry_run:
            with self.session(context) as (client, _writer):
                listed = ours_in_flight(client, folder.root)
            if listed:
                deadline = time.time() + float(self.janitor_timeout_s)
                folder.write_json(folder.throttle_janitor, {
                    "kept_at": time.time(), "in_flight": listed, "removed_at": None,
                    "note": f"{len(listed)} partition(s) of this run still being reassigned: throttles kept "
                            "until they finish"})
                self.log.warning("%d partition(s) of this run are still being reassigned (%s): the throttles "
                                 "stay until they finish; waiting (deferred) to remove them then", len(listed),
                                 ", ".join(listed[:10]))
                notify_event(context, folder, "throttles_kept", self.log,
                             body=f"{len(listed)} partition(s) of this run are still being reassigned "
                                  f"({', '.join(listed[:10])}{' ...' if len(listed) > 10 else ''}): the throttles stay "
                                  "on until they finish, then this step removes them and tells you. It gives up "
                                  f"after {duration_text(timedelta(seconds=float(self.janitor_timeout_s)))} "
                                  "(the throttle_janitor_s Param).",
                             fields={"still copying": len(listed)})
                self.defer(trigger=ReassignmentGoneTrigger(self.zk_conn_id, str(folder.root), deadline,
                                                           float(self.poll_interval_s), not_before()),
                           method_name="execute_complete",
                           timeout=timedelta(seconds=float(self.janitor_timeout_s) + 60))
        return self._remove(context, folder)

    def execute_complete(self, context: Any, event: dict[str, Any]) -> dict:
        folder = self.folder(context)
        doc = folder.read_json(folder.throttle_janitor) or {}
        if event.get("status") != "done":
            listed = event.get("listed") or doc.get("in_flight") or []
            raise VerificationFailed(
                f"partitions of this run still being reassigned after "
                f"{duration_text(timedelta(seconds=float(self.janitor_timeout_s)))} (throttle_janitor_s): "
                f"{', '.join(listed[:10])}; the throttles are kept. Once /admin/reassign_partitions no longer "
                "lists them, clear remove_throttles (or remove them with kafka-runbook throttle and the run's "
                "throttles.json)")
        result = self._remove(context, folder)
        folder.write_json(folder.throttle_janitor, {**doc, "removed_at": time.time()})
        self.log.info("the run's last wave finished: throttles removed")
        notify_event(context, folder, "throttles_removed", self.log,
                     body=f"The partitions that were still being reassigned ({len(doc.get('in_flight') or [])}) "
                          f"finished: the run's throttles are removed ({len(result['restored'])} config(s) restored).")
        return result

    def _remove(self, context: Any, folder: RunFolder) -> dict:
        record = ThrottleRecord.load(folder.throttle_record)
        with self.session(context) as (client, writer):
            written = remove_throttles(writer, record)
            left = {} if self.is_dry_run else throttles_left(client, record)
        for path in written:
            self.log.info("restored pre-run throttle values at %s%s", path,
                          " (dry run: planned only)" if self.is_dry_run else "")
        if left:
            raise VerificationFailed(f"throttles of this run still present after removal: {left}; "
                                     "re-run remove_throttles, or remove them with kafka-configs")
        if not self.is_dry_run:   # the health check stops counting these throttles as this run's
            folder.write_json(folder.root / REMOVED_MARKER, {"restored": written, "task": self.task_id})
        return {"restored": written}
