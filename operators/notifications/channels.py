"""Send a :class:`Notification` to every channel a runbook names, each an Airflow Connection.

A runbook's ``notify_conn_ids`` Param lists connection ids; each connection's type picks the
notifier: ``smtp`` → the SMTP provider's ``SmtpNotifier`` (recipients in the connection extra
``to``, a list or comma-separated; sender in ``from_email``), ``http`` → :class:`WebhookNotifier`.
Every channel is tried; a channel that fails is logged and reported back, never raised: a
mail server that is down must not fail (or, worse, retry) a step that already changed the
cluster. The caller records what was delivered.

Failure: an unknown connection type or an SMTP connection without recipients is a
:class:`ChannelMisconfigured` in the returned list, with the fix.
"""

from __future__ import annotations

import html
import logging
from dataclasses import dataclass
from typing import Any, Iterable

from airflow.sdk import BaseHook
from airflow.sdk.bases.notifier import BaseNotifier

from operators.notifications.message import Notification
from operators.notifications.webhook import WebhookNotifier


class ChannelMisconfigured(ValueError):
    """A notification connection that cannot be used as it is."""


@dataclass(frozen=True)
class Delivery:
    """What happened on one channel."""

    conn_id: str
    ok: bool
    error: str | None = None


def _recipients(conn: Any) -> list[str]:
    to = conn.extra_dejson.get("to") or []
    if isinstance(to, str):
        to = [t.strip() for t in to.split(",")]
    return [t for t in to if t]


def notifier_for(conn_id: str, note: Notification) -> BaseNotifier:
    """The Airflow notifier that delivers ``note`` through connection ``conn_id``."""
    conn = BaseHook.get_connection(conn_id)
    kind = (conn.conn_type or "").lower()
    if kind == "smtp":
        from airflow.providers.smtp.notifications.smtp import SmtpNotifier

        to = _recipients(conn)
        if not to:
            raise ChannelMisconfigured(f"smtp connection {conn_id} has no recipients: set its extra "
                                       '"to" (e.g. ["oncall@example.com"])')
        body = f"<pre>{html.escape(note.text())}</pre>"
        return SmtpNotifier(to=to, from_email=conn.extra_dejson.get("from_email") or None, subject=note.subject,
                            html_content=body, smtp_conn_id=conn_id)
    if kind in ("http", "https", "webhook"):
        return WebhookNotifier(http_conn_id=conn_id, notification=note)
    raise ChannelMisconfigured(f"connection {conn_id} has type {conn.conn_type!r}: notifications go to smtp or "
                               "http connections; change its type or remove it from notify_conn_ids")


def send(note: Notification, conn_ids: Iterable[str], context: Any, log: logging.Logger) -> list[Delivery]:
    """Deliver ``note`` on every channel; log and return each outcome (never raises)."""
    out = []
    for conn_id in conn_ids:
        try:
            notifier_for(conn_id, note).notify(context)
        except Exception as e:  # every channel is independent; the failure is reported, not raised
            log.error("notification %s via %s not delivered: %s", note.event, conn_id, e)
            out.append(Delivery(conn_id, False, str(e)))
        else:
            log.info("notification %s delivered via %s", note.event, conn_id)
            out.append(Delivery(conn_id, True))
    return out
