"""A real SMTP server (aiosmtpd) and a real HTTP receiver, both on 127.0.0.1 free ports."""

from __future__ import annotations

import pytest
from aiosmtpd.controller import Controller

from tests.notify_servers import Inbox, webhook_receiver
from tests.real_airflow import free_port


@pytest.fixture
def smtp_server():
    inbox = Inbox()
    port = free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port, ready_timeout=60)
    controller.start()
    try:
        yield port, inbox
    finally:
        controller.stop()


@pytest.fixture
def webhook_server():
    server = webhook_receiver()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        server.thread.join(timeout=10)
