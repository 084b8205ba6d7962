"""WaveDoneTrigger: wait, without holding a worker, until the controller finishes one wave.

The trigger carries only primitives (connection id, run id, wave id, an *absolute* deadline,
the run folder and poll timings), so a restarted triggerer resumes the same wait with the same
clock (``self.clock``, :mod:`operators.triggers.clock`). Each poll reads the wave's partitions
and ``/admin/reassign_partitions`` through :func:`kafka_zk.snapshot.read_snapshot` in a worker
thread (``asyncio.to_thread``: kazoo calls never block the event loop), plus the follower log
sizes of the connection's ``log_dirs_source`` when it names one
(:mod:`procedures.plan.log_dirs_source`), and logs one progress line: partitions done/total for the
wave and the whole plan, bytes remaining, throughput and ETA, and what the bytes were judged
from (follower log sizes, or ISR joins only).

**Stalls.** Progress is a change in partitions done or bytes remaining. With follower log sizes
a healthy copy changes at every poll, so a stall is judged from those bytes: the warning comes
after ``stall_warning_s`` without a byte copied (default: the longer of 60 s, ten polls and the
source's max age plus two polls). From ISR joins only, a healthy copy shows no change until a
replica joins, so nothing is called a stall sooner than 1.5× the time the wave's largest
partition takes at ``throttle_bytes_per_s`` (the default warning is that, at least 60 s; an
explicit ``stall_warning_s`` or ``stall_timeout_s`` is raised to it).

It yields exactly one :class:`TriggerEvent`, ``status`` being:

* ``done`` — every partition of the wave has replicas == target, nothing adding/removing,
  the whole target in the ISR, and ``/admin/reassign_partitions`` no longer lists any of them
  (gone, or — if someone else wrote one since — holding none of ours);
* ``stalled`` — no progress for ``stall_timeout_s`` (judged as above); every stall warning and
  ``stalled`` message names the stopped partitions and the likely cause
  (:mod:`procedures.waves.stall_causes`: follower up but failing its fetches — a lowered
  ``max.message.bytes`` named — …);
* ``stalled`` with ``dead_end`` — at once when a topic of the wave was deleted while its
  partition moved (it can never finish); and when a cause that waiting cannot clear has lasted
  ``dead_end_s``: a destination broker not registered, no controller, or a controller that
  never started the node (the message gives the fix: restart the broker or re-plan; force a
  controller election by deleting ``/controller``). A controller that has not started the node
  counts only on evidence (:mod:`procedures.waves.controller_evidence`): the same controller
  epoch, its session alive, for ``min(CONTROLLER_EVIDENCE_S, dead_end_s)``; before that a slow
  controller is logged as such, never with the advice to move it;
* ``timeout`` — the absolute ``deadline`` (epoch seconds) passed (the message names the likely
  cause of each stopped partition, as a stall's does);
* ``error`` — ZooKeeper unreachable for longer than ``zk_outage_s`` (a session expiry or a
  short outage is retried at every poll with a fresh client, logged with its real cause, and
  the message names that cause), the progress file unreadable, or the connection's
  ``log_dirs_source`` malformed (the message says which).

**The stall notification** (one per wait, to the run's ``notify_conn_ids``) goes out when the
problem is first seen: when a cause waiting cannot clear (a destination broker not registered,
no controller...) has lasted ``BLOCKED_NOTICE_S`` (10 s, at least three polls), at the first
stall warning, and in any case before a ``stalled`` or
``timeout`` event, naming the causes.

``not_before`` (epoch seconds, set by the executor to a few seconds after it defers) holds a
``done`` back until then (:mod:`operators.triggers.base`, :mod:`operators.deferral`).

The payload also carries the last progress figures. The operator's ``execute_complete`` maps
every status but ``done`` to an error type (:mod:`operators.errors`).

This class is the Airflow shell: the rules above are the pure :func:`procedures.waves.observe.observe`
and the poll loop is :class:`procedures.waves.watch.WaveWatch` (the rehearsal runs the same loop
without Airflow); here are only the seams — the connection's hook as the ZooKeeper session, its
``log_dirs_source``, the run's notification channels — and the ``TriggerEvent`` around the payload.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, AsyncIterator

from airflow.triggers.base import TriggerEvent

from kafka_zk.outage import ZK_OUTAGE_S
from operators.notifications.runbook import build, deliver
from operators.triggers.base import ZooKeeperPollTrigger
from procedures.plan.log_dirs_source import LogDirsSource
from procedures.run_folder import RunFolder
from procedures.waves.book import WaveProgress
from procedures.waves.observe import DEAD_END_S
from procedures.waves.watch import WaveWatch


class WaveDoneTrigger(WaveWatch, ZooKeeperPollTrigger):
    """Fires once wave ``wave_id`` of run ``run_id`` is finished by the controller (or stalls)."""

    def __init__(self, zk_conn_id: str, run_id: str, wave_id: int, deadline: float, run_dir: str,
                 poll_interval: float = 2.0, stall_warning_s: float | None = None,
                 stall_timeout_s: float | None = None, not_before: float | None = None,
                 zk_outage_s: float = ZK_OUTAGE_S, throttle_bytes_per_s: float | None = None,
                 dead_end_s: float = DEAD_END_S, dag_id: str = "", notify_conn_ids: list[str] | None = None) -> None:
        super().__init__(zk_conn_id, deadline, poll_interval, not_before)
        self._configure(run_id, wave_id, deadline, run_dir, poll_interval, stall_warning_s, stall_timeout_s,
                        not_before, zk_outage_s, throttle_bytes_per_s, dead_end_s)
        self.dag_id = dag_id
        self.notify_conn_ids = list(notify_conn_ids or [])
        self._source: LogDirsSource | None = None
        self._source_read = False

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{__name__}.WaveDoneTrigger", {
            "zk_conn_id": self.zk_conn_id, "run_id": self.run_id, "wave_id": self.wave_id,
            "deadline": self.deadline, "run_dir": self.run_dir, "poll_interval": self.poll_interval,
            "stall_warning_s": self.stall_warning_s, "stall_timeout_s": self.stall_timeout_s,
            "not_before": self.not_before, "zk_outage_s": self.zk_outage_s,
            "throttle_bytes_per_s": self.throttle_bytes_per_s, "dead_end_s": self.dead_end_s,
            "dag_id": self.dag_id, "notify_conn_ids": self.notify_conn_ids})

    # -- the seams (the ZooKeeper session is the base's hook: _client, _close) -----------------

    def _log_dirs_source(self) -> LogDirsSource | None:
        if not self._source_read:
            self._client()
            self._source = self._hook.log_dirs_source()
            self._source_read = True
        return self._source

    def _notify_stall(self, what: str, progress: WaveProgress, causes: str, then: str) -> None:
        """The stall notification (once per wait), to the run's channels; never raises."""

        folder = RunFolder(Path(self.run_dir))
        try:
            note = build("stall", folder, self.dag_id or "runbook", self.run_id,
                         f"Wave {self.wave_id} {what} ({progress.done}/{progress.total} partitions done; judged "
                         f"from {progress.source}). Stopped: {causes or 'see the task log'}. {then}",
                         fields={"wave": self.wave_id, "still moving": ", ".join(progress.pending[:10]),
                                 "cause": causes or "unknown"})
            deliver(note, folder, self.notify_conn_ids, {}, self.log)
        except Exception as e:  # a notification must never end the wait
            self.log.error("stall notification not sent: %s", e)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        async for payload in self.watch():
            yield TriggerEvent(payload)
