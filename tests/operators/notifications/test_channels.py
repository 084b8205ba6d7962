"""Notifications reach a real SMTP server and a real HTTP receiver through Airflow Connections;
a broken channel is reported, never raised, and the others still receive."""

from __future__ import annotations

import email
import json
import logging

import pytest

from operators.notifications.channels import send
from operators.notifications.message import Notification

NOTE = Notification(event="failed", dag_id="decommission_brokers", run_id="manual__1",
                    title="failed at execute_waves", body="wave 2 still running (throttled)",
                    link="http://127.0.0.1:8080/kafka-runbooks/reports/x", fields={"outcome": "failed"})


def _conn(monkeypatch, conn_id: str, **spec) -> None:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(spec))


def test_an_email_reaches_the_smtp_server_with_subject_and_body(monkeypatch, smtp_server):
    port, inbox = smtp_server
    _conn(monkeypatch, "mail_oncall", conn_type="smtp", host="127.0.0.1", port=port,
          extra={"disable_ssl": True, "disable_tls": True, "from_email": "runbooks@example.com",
                 "to": ["oncall@example.com", "sre@example.com"], "timeout": 10})
    result = send(NOTE, ["mail_oncall"], {}, logging.getLogger("t"))
    assert [d.ok for d in result] == [True], result
    [msg] = inbox.messages
    assert sorted(msg["to"]) == ["oncall@example.com", "sre@example.com"]
    parsed = email.message_from_string(msg["data"])
    assert parsed["Subject"] == "[kafka-runbooks] decommission_brokers: failed at execute_waves"
    assert parsed.get_content_type() == "multipart/alternative"
    parts = {p.get_content_type(): p.get_payload(decode=True).decode() for p in parsed.walk()
             if not p.is_multipart()}
    assert list(parts) == ["text/plain", "text/html"]          # plain first: clients show the last they can
    assert parts["text/plain"] == NOTE.text()
    page = parts["text/html"]
    assert "<pre>" not in page and "<h2>failed at execute_waves</h2>" in page
    assert "<p>wave 2 still running (throttled)</p>" in page and f'href="{NOTE.link}"' in page
    assert '<th align="left">outcome</th><td>failed</td>' in page


def test_the_html_form_renders_the_markdown_body_and_escapes_what_it_says() -> None:
    """Issue 24: e-mail bodies were raw Markdown inside <pre>. Tables, emphasis and links are
    rendered; HTML written in a body (a topic named like a tag) is shown, not interpreted."""
    body = ("**Decommission brokers 4, 5** on `kafka_prod`\n\n"
            "| broker | replicas before → after |\n| --- | --- |\n| 4 (removed) | 120 → 0 |\n\n"
            "[Open the plan report](http://airflow:8080/kafka-runbooks/runs/d/r/plan_report.html)\n\n"
            "topic <script>alert(1)</script>")
    page = Notification(event="approval_requested", dag_id="decommission_brokers", run_id="r",
                        title="approval requested: Decommission brokers 4, 5", body=body).html()
    assert "<strong>Decommission brokers 4, 5</strong>" in page and "<code>kafka_prod</code>" in page
    assert "<table>" in page and "<td>4 (removed)</td>" in page and "<td>120 → 0</td>" in page
    assert '<a href="http://airflow:8080/kafka-runbooks/runs/d/r/plan_report.html">Open the plan report</a>' in page
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_a_webhook_receives_the_json(monkeypatch, webhook_server):
    _conn(monkeypatch, "chat", conn_type="http", host="127.0.0.1", port=webhook_server.server_port, schema="http",
          extra={"endpoint": "/hooks/kafka", "headers": {"Authorization": "Bearer t0k"}})
    [d] = send(NOTE, ["chat"], {}, logging.getLogger("t"))
    assert d.ok, d
    [got] = webhook_server.received
    assert got["path"] == "/hooks/kafka" and got["headers"]["Authorization"] == "Bearer t0k"
    assert (got["json"]["event"], got["json"]["run_id"], got["json"]["fields"]) == \
        ("failed", "manual__1", {"outcome": "failed"})
    assert got["json"]["text"].startswith("failed at execute_waves")


def test_a_failing_channel_is_reported_and_the_others_still_receive(monkeypatch, webhook_server, caplog):
    webhook_server.status = 500
    _conn(monkeypatch, "chat", conn_type="http", host="127.0.0.1", port=webhook_server.server_port, schema="http")
    _conn(monkeypatch, "ftp_thing", conn_type="ftp", host="127.0.0.1")
    _conn(monkeypatch, "mail_norcpt", conn_type="smtp", host="127.0.0.1", port=1)
    results = send(NOTE, ["chat", "ftp_thing", "mail_norcpt"], {}, logging.getLogger("t"))
    assert [d.ok for d in results] == [False, False, False]
    assert "answered HTTP 500" in results[0].error
    assert "notifications go to smtp or http" in results[1].error
    assert 'has no recipients: set its extra "to"' in results[2].error
    assert len(webhook_server.received) == 1


def test_an_unknown_event_is_refused():
    with pytest.raises(ValueError, match="unknown notification event"):
        Notification(event="done", dag_id="d", run_id="r", title="t", body="b")
