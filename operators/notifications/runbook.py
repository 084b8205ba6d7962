"""A runbook's notifications: build the message for one event of a run and send it to the run's channels.

The channels are the run's ``notify_conn_ids`` Param (Airflow Connections, see
:mod:`operators.notifications.channels`); each delivery is appended to the run folder's
``notifications.jsonl`` (event, channel, delivered or the error), so the report and a person
reading the folder know who was told what. With no channel the message is only logged.

Events sent from here: ``approval_requested`` (the approval step, when a human is asked),
``window_paused`` (the executor, when a wave waits for the next maintenance window), ``stall``
(the wave trigger, when a wave stopped making progress or is blocked), ``failed`` (the executor as
a wave fails, and the notify step), ``throttles_kept`` / ``throttles_removed`` (the teardown, when
it keeps the throttles on a wave still copying, and when it removes them), ``finished`` (the
notify step).

Failure: none raised — a channel that is down is logged and recorded (a mail server must not
fail a step that already changed the cluster).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Iterable, Mapping

from kafka_zk.audit import utc_now_iso
from procedures.run_folder import RunFolder
from operators.notifications.channels import send
from operators.notifications.message import Notification
from operators.notifications.pages import run_page
from procedures.reports.titles import heading

LOG_FILE = "notifications.jsonl"


def conn_ids_of(context: Mapping[str, Any]) -> list[str]:
    """The run's ``notify_conn_ids`` Param as a list of connection ids (empty when unset)."""
    raw = (context.get("params") or {}).get("notify_conn_ids") or []
    if isinstance(raw, str):
        raw = [c.strip() for c in raw.split(",")]
    return [str(c).strip() for c in raw if str(c).strip()]


def _title(event: str, folder: RunFolder, dag_id: str, extra: Mapping[str, Any]) -> str:
    head = heading(folder, dag_id, list(extra.get("removed") or ()))
    what = str(extra.get("what") or "") or head["what"] + (f" {head['subject']}" if head["subject"] else "")
    return {"approval_requested": f"approval requested: {what}",
            "window_paused": f"paused until the next maintenance window: {what}",
            "stall": f"a wave stopped making progress: {what}",
            "throttles_kept": f"throttles kept on a wave still copying: {what}",
            "throttles_removed": f"throttles removed, the last wave finished: {what}",
            "finished": f"{what}: {extra.get('outcome', 'finished')}",
            "failed": f"{what}: {extra.get('outcome', 'FAILED')}"}[event]


def build(event: str, folder: RunFolder, dag_id: str, run_id: str, body: str, link: str | None = None,
          fields: Mapping[str, Any] | None = None, **extra: Any) -> Notification:
    """The notification of ``event`` for one run."""
    return Notification(event=event, dag_id=dag_id, run_id=run_id, title=_title(event, folder, dag_id, extra),
                        body=body, link=link, fields={k: str(v) for k, v in (fields or {}).items()})


def deliver(note: Notification, folder: RunFolder, conn_ids: Iterable[str], context: Any,
            log: logging.Logger) -> None:
    """Send ``note`` on every channel (or log it when there is none) and record each outcome."""
    conn_ids = list(conn_ids)
    if not conn_ids:
        log.info("notification %s (no notify_conn_ids: logged only):\n%s", note.event, note.text())
        records = [{"event": note.event, "channel": None, "delivered": False, "note": "no channel configured"}]
    else:
        records = [{"event": note.event, "channel": d.conn_id, "delivered": d.ok, "error": d.error}
                   for d in send(note, conn_ids, context, log)]
    with open(folder.root / LOG_FILE, "a", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps({"at": utc_now_iso(), "subject": note.subject, **r}, sort_keys=True) + "\n")


def notify_event(context: Mapping[str, Any], folder: RunFolder, event: str, log: logging.Logger,
                 body: str = "", link: str | None = None, fields: Mapping[str, Any] | None = None,
                 **extra: Any) -> None:
    """Build and deliver ``event`` for the run in ``context`` to its ``notify_conn_ids``; without a
    ``link`` the message links the run's live progress page (one served page, by URL, never a path)."""
    dag_id, run_id = context["dag"].dag_id, context["run_id"]
    note = build(event, folder, dag_id, run_id, body or event, link or run_page(dag_id, run_id, "progress"), fields,
                 **extra)
    deliver(note, folder, conn_ids_of(context), context, log)


def delivered(folder: RunFolder) -> list[dict]:
    """What ``notifications.jsonl`` records (for reports and tests)."""
    path = folder.root / LOG_FILE
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
