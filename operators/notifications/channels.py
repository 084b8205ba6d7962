"""Send a :class:`Notification` to every channel a runbook names, each an Airflow Connection.

A runbook's ``notify_conn_ids`` Param lists connection ids; each connection's type picks the
notifier: ``smtp`` → :class:`MailNotifier`, a ``multipart/alternative`` e-mail with a plain-text
part and an HTML part, sent with the SMTP provider's hook (recipients in the connection extra
``to``, a list or comma-separated; sender in ``from_email``), ``http`` → :class:`WebhookNotifier`.
Every channel is tried; a channel that fails is logged and reported back, never raised: a
mail server that is down must not fail (or, worse, retry) a step that already changed the
cluster. The caller records what was delivered.

Failure: an unknown connection type or an SMTP connection without recipients is a
:class:`ChannelMisconfigured` in the returned list, with the fix.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from email.mime.text import MIMEText
from typing import Any, Iterable

from airflow.sdk import BaseHook
from airflow.providers.smtp.hooks.smtp import SmtpHook
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


class _AlternativeSmtpHook(SmtpHook):
    """The SMTP provider's hook, with the plain-text part added before the HTML one
    (``multipart/alternative``: a client shows the last part it can render)."""

    def __init__(self, smtp_conn_id: str, plain_text: str) -> None:
        super().__init__(smtp_conn_id=smtp_conn_id)
        self.plain_text = plain_text

    def _build_mime_message(self, *args: Any, **kwargs: Any) -> tuple[Any, list[str]]:
        msg, recipients = super()._build_mime_message(*args, **kwargs)
        msg.set_payload([MIMEText(self.plain_text, "plain", kwargs.get("mime_charset", "utf-8")), *msg.get_payload()])
        return msg, recipients


class MailNotifier(BaseNotifier):
    """E-mail through an ``smtp`` connection: a plain-text part and an HTML part (rendered Markdown)."""

    def __init__(self, conn_id: str, to: list[str], from_email: str | None, note: Notification) -> None:
        super().__init__()
        self.conn_id, self.to, self.from_email, self.note = conn_id, to, from_email, note

    def notify(self, context: Any) -> None:
        with _AlternativeSmtpHook(self.conn_id, self.note.text()) as hook:
            hook.send_email_smtp(to=self.to, from_email=self.from_email, subject=self.note.subject,
                                 html_content=self.note.html(), mime_subtype="alternative")


def notifier_for(conn_id: str, note: Notification) -> BaseNotifier:
    """The Airflow notifier that delivers ``note`` through connection ``conn_id``."""
    conn = BaseHook.get_connection(conn_id)
    kind = (conn.conn_type or "").lower()
    if kind == "smtp":
        to = _recipients(conn)
        if not to:
            raise ChannelMisconfigured(f"smtp connection {conn_id} has no recipients: set its extra "
                                       '"to" (e.g. ["oncall@example.com"])')
        return MailNotifier(conn_id, to, conn.extra_dejson.get("from_email") or None, note)
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
