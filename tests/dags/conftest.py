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


def zk_connection(zk_server, chroot: str) -> str:
    """Define an Airflow connection on ``chroot``; return its id."""
    conn_id = f"zk_{chroot.strip('/')}"
    os.environ[f"AIRFLOW_CONN_{conn_id.upper()}"] = json.dumps({
        "conn_type": "kafka_zookeeper", "host": zk_server.connect_string,
        "extra": {"chroot": chroot, "connect_timeout": 10, "session_timeout": 10}})
    return conn_id


def plain_client(zk_server, chroot: str) -> KazooClient:
    client = KazooClient(hosts=zk_server.connect_string + chroot, timeout=10)
    client.start(timeout=10)
    return client
