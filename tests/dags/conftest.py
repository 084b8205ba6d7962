"""Fixtures of the DAG end-to-end tests: Airflow's DB, connections, a chroot per cluster."""

from __future__ import annotations

import json
import os

import pytest
from kazoo.client import KazooClient

from tests.airflow_env import ensure_db
from tests.conftest import new_chroot as _new_chroot


@pytest.fixture(scope="session")
def airflow_db() -> None:
    ensure_db()
    os.environ["AIRFLOW_CONN_SPARK_LOCAL"] = json.dumps({"conn_type": "spark", "host": "local[2]"})


def new_chroot(zk_server) -> str:
    return _new_chroot(zk_server, prefix="/e2e")


@pytest.fixture
def zk_via(request, zk_proxies):
    """The old-server proxy the DAG's ZooKeeper steps go through (``None``: ZooKeeper 3.8
    directly). A test picks modes with ``@pytest.mark.parametrize("zk_via", [...], indirect=True)``;
    the emulator and the plain kazoo client always talk to the real server."""
    mode = getattr(request, "param", "3.8")
    if mode == "3.8":
        yield None
        return
    proxy = zk_proxies[mode]
    before = len(proxy.refused)
    yield proxy
    assert proxy.refused[before:] == [], f"ZooKeeper {proxy.mode} would have closed the session"


OLD_SERVERS = ["3.8", "3.5", "3.4"]


def through_proxy(via) -> dict:
    """Conf for a run whose ZooKeeper steps go through the old-server proxy ``via``: ``rehearse=off``
    (``{}`` when ``via`` is None, ZooKeeper 3.8 directly). The rehearse step never talks to the run's
    cluster (it rehearses on a chroot of ``$KAFKA_RUNBOOKS_REHEARSAL_ZOOKEEPER``, directly), so
    through a proxy it pins nothing that the same runbook's direct run in the same file does not;
    it was ~8-15 s of each such run on a loaded machine (2026-11-27), mostly its child importing Airflow."""
    return {} if via is None else {"rehearse": "off"}


def zk_connection(zk_server, chroot: str, via=None, log_dirs_source: str | None = None) -> str:
    """Define an Airflow connection on ``chroot`` (through the proxy ``via`` if given; reading replica
    sizes from ``log_dirs_source`` if given); return its id."""
    conn_id = f"zk_{chroot.strip('/')}"
    extra = {"chroot": chroot, "connect_timeout": 10, "session_timeout": 10}
    if log_dirs_source is not None:
        extra["log_dirs_source"] = log_dirs_source
    os.environ[f"AIRFLOW_CONN_{conn_id.upper()}"] = json.dumps({
        "conn_type": "kafka_zookeeper", "host": via.hosts if via is not None else zk_server.connect_string,
        "extra": extra})
    return conn_id


def plain_client(zk_server, chroot: str) -> KazooClient:
    client = KazooClient(hosts=zk_server.connect_string + chroot, timeout=10)
    client.start(timeout=10)
    return client


@pytest.fixture
def smtp_sink():
    """A real SMTP server on 127.0.0.1 and the Airflow connection ``notify_mail`` mailing to it."""
    from tests.notify_servers import SmtpSink

    with SmtpSink() as sink:
        yield sink


@pytest.fixture
def webhook_sink():
    """A real HTTP receiver on 127.0.0.1 and the Airflow connection ``notify_hook`` posting to it."""
    from tests.notify_servers import WebhookSink

    with WebhookSink() as sink:
        yield sink


@pytest.fixture(autouse=True)
def rehearsal_zookeeper(zk_server, monkeypatch):
    """The runbooks' rehearse step takes a fresh chroot on the tests' ZooKeeper instead of starting
    a JVM per run (operators/rehearsal/step.py)."""
    from operators.rehearsal.step import ZOOKEEPER_ENV

    monkeypatch.setenv(ZOOKEEPER_ENV, zk_server.connect_string)
