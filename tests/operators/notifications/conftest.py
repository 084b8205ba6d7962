"""A real SMTP server (aiosmtpd) and a real HTTP receiver, both on 127.0.0.1 free ports."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from aiosmtpd.controller import Controller

from tests.real_airflow import free_port


class _Inbox:
    def __init__(self) -> None:
        self.messages: list[dict] = []
        self.arrived = threading.Condition()

    async def handle_DATA(self, server, session, envelope):  # aiosmtpd handler hook
        with self.arrived:
            self.messages.append({"from": envelope.mail_from, "to": list(envelope.rcpt_tos),
                                  "data": envelope.content.decode("utf-8", "replace")})
            self.arrived.notify_all()
        return "250 OK"


@pytest.fixture
def smtp_server():
    inbox = _Inbox()
    port = free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port, ready_timeout=60)
    controller.start()
    try:
        yield port, inbox
    finally:
        controller.stop()


class _Receiver(BaseHTTPRequestHandler):
    received: list[dict]
    status = 200

    def do_POST(self):  # noqa: N802 (http.server's naming)
        length = int(self.headers.get("Content-Length", 0))
        self.server.received.append({"path": self.path, "headers": dict(self.headers),
                                     "json": json.loads(self.rfile.read(length))})
        self.send_response(self.server.status)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def webhook_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    server.received, server.status = [], 200
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
