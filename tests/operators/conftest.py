"""Fixtures of the operator tests: the Airflow metadata DB and a ZooKeeper connection id."""

from __future__ import annotations

import uuid
from typing import Iterator

import pytest

from tests.airflow_env import ensure_db


@pytest.fixture(scope="session")
def airflow_db() -> None:
    ensure_db()


@pytest.fixture
def zk_conn_id(zk_server, zk_chroot: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An Airflow connection (env var, JSON form) on this test's chroot."""
    import json

    conn_id = f"zk_{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({
        "conn_type": "kafka_zookeeper", "host": zk_server.connect_string,
        "extra": {"chroot": zk_chroot, "connect_timeout": 5, "session_timeout": 10}}))
    yield conn_id
