"""WebhookNotifier: POST a run's notification as JSON to an HTTP endpoint named by a Connection.

The connection (type ``http``) gives scheme (``schema``: http or https, default https), host, port
and, in its extra, ``endpoint`` (the path, default ``/``) and optional ``headers`` (a mapping, e.g.
an ``Authorization`` token). The body is :meth:`Notification.to_json` — event, dag_id, run_id,
title, body, link, fields, plus ``subject`` and ``text`` ready for chat tools that take a text
field. One attempt, bounded by ``timeout`` seconds.

Failure: :class:`WebhookFailed` names the connection, the URL (never its headers) and the HTTP
status or network error.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from airflow.sdk import BaseHook
from airflow.sdk.bases.notifier import BaseNotifier

from operators.notifications.message import Notification


class WebhookFailed(RuntimeError):
    """The endpoint did not accept the notification."""


def webhook_url(conn: Any) -> str:
    scheme = (conn.schema or "https").lower()
    if scheme not in ("http", "https"):
        raise WebhookFailed(f"connection {conn.conn_id}: schema {scheme!r} is not http or https; set it to one of them")
    if not conn.host:
        raise WebhookFailed(f"connection {conn.conn_id}: no host; set the webhook's host")
    endpoint = str(conn.extra_dejson.get("endpoint") or "/")
    port = f":{conn.port}" if conn.port else ""
    return f"{scheme}://{conn.host}{port}/{endpoint.lstrip('/')}"


class WebhookNotifier(BaseNotifier):
    """Send one :class:`Notification` to the connection's endpoint (see module docstring)."""

    def __init__(self, *, http_conn_id: str, notification: Notification, timeout: float = 10.0) -> None:
        super().__init__()
        self.http_conn_id = http_conn_id
        self.notification = notification
        self.timeout = timeout

    def notify(self, context: Any) -> None:
        conn = BaseHook.get_connection(self.http_conn_id)
        url = webhook_url(conn)
        headers = {"Content-Type": "application/json", **{str(k): str(v) for k, v in
                                                         (conn.extra_dejson.get("headers") or {}).items()}}
        data = json.dumps(self.notification.to_json()).encode("utf-8")
        request = urllib.request.Request(url, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as reply:
                status = reply.status
        except urllib.error.HTTPError as e:
            raise WebhookFailed(f"webhook {self.http_conn_id} ({url}) answered HTTP {e.code}") from None
        except (urllib.error.URLError, OSError) as e:
            raise WebhookFailed(f"webhook {self.http_conn_id} ({url}) not reached: "
                                f"{getattr(e, 'reason', e)}") from None
        if not 200 <= status < 300:
            raise WebhookFailed(f"webhook {self.http_conn_id} ({url}) answered HTTP {status}")
