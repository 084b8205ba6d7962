"""A real SMTP server (aiosmtpd) and a real HTTP receiver on 127.0.0.1 free ports, and the
Airflow Connections that point at them, for the notification tests.

:class:`SmtpSink` / :class:`WebhookSink` start the server, define the connection (an
``AIRFLOW_CONN_*`` environment variable) and wait, bounded, for messages.
"""

from __future__ import annotations

import email
import json
import os
import threading
import time
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from aiosmtpd.controller import Controller

from tests.real_airflow import free_port


class Inbox:
    """aiosmtpd's handler: keeps every message."""

    def __init__(self) -> None:
        self.messages: list[dict] = []
        self.arrived = threading.Condition()

    async def handle_DATA(self, server, session, envelope):  # aiosmtpd handler hook
        with self.arrived:
            self.messages.append({"from": envelope.mail_from, "to": list(envelope.rcpt_tos),
                                  "data": envelope.content.decode("utf-8", "replace")})
            self.arrived.notify_all()
        return "250 OK"


class _Receiver(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (http.server's naming)
        length = int(self.headers.get("Content-Length", 0))
        self.server.received.append({"path": self.path, "headers": dict(self.headers),
                                     "json": json.loads(self.rfile.read(length)), "at": time.time()})
        self.send_response(self.server.status)
        self.end_headers()

    def log_message(self, *args):
        pass


def webhook_receiver() -> ThreadingHTTPServer:
    """An HTTP server on 127.0.0.1 keeping every POSTed JSON in ``.received``; started."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    server.received, server.status = [], 200
    server.thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    server.thread.start()
    return server


def _wait(count_now, n: int, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while count_now() < n:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: {count_now()} message(s) after {timeout:g}s, expected {n}")
        time.sleep(0.1)


class SmtpSink:
    """An SMTP server and the ``smtp`` connection ``conn_id`` that mails to it."""

    def __init__(self, conn_id: str = "notify_mail") -> None:
        self.conn_id = conn_id
        self.inbox = Inbox()
        self.port = free_port()
        self.controller = Controller(self.inbox, hostname="127.0.0.1", port=self.port, ready_timeout=60)

    def __enter__(self) -> "SmtpSink":
        self.controller.start()
        os.environ[f"AIRFLOW_CONN_{self.conn_id.upper()}"] = json.dumps({
            "conn_type": "smtp", "host": "127.0.0.1", "port": self.port,
            "extra": {"disable_ssl": True, "disable_tls": True, "from_email": "runbooks@example.com",
                      "to": ["oncall@example.com"], "timeout": 10}})
        return self

    def __exit__(self, *exc) -> None:
        os.environ.pop(f"AIRFLOW_CONN_{self.conn_id.upper()}", None)
        self.controller.stop()

    def wait_for(self, n: int, timeout: float = 60) -> list[Message]:
        """At least ``n`` messages (bounded wait), parsed."""
        _wait(lambda: len(self.inbox.messages), n, timeout, "smtp")
        return [email.message_from_string(m["data"]) for m in self.inbox.messages]


class WebhookSink:
    """An HTTP receiver and the ``http`` connection ``conn_id`` that posts to it."""

    def __init__(self, conn_id: str = "notify_hook") -> None:
        self.conn_id = conn_id
        self.server = webhook_receiver()

    def __enter__(self) -> "WebhookSink":
        os.environ[f"AIRFLOW_CONN_{self.conn_id.upper()}"] = json.dumps({
            "conn_type": "http", "host": "127.0.0.1", "port": self.server.server_port, "schema": "http",
            "extra": {"endpoint": "/hooks/kafka"}})
        return self

    def __exit__(self, *exc) -> None:
        os.environ.pop(f"AIRFLOW_CONN_{self.conn_id.upper()}", None)
        self.server.shutdown()
        self.server.server_close()

    def wait_for(self, n: int, timeout: float = 60) -> list[dict]:
        """At least ``n`` posted JSON bodies (bounded wait)."""
        _wait(lambda: len(self.server.received), n, timeout, "webhook")
        return [r["json"] for r in self.server.received]

    def arrivals(self) -> list[tuple[float, dict]]:
        """Every posted JSON body with the epoch time it arrived, in arrival order."""
        return [(r["at"], r["json"]) for r in list(self.server.received)]
