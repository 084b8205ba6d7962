"""The compose file's cluster connection, read by the project's own ZooKeeperHook.

The hook (operators/hooks/zookeeper.py) turns ``AIRFLOW_CONN_KAFKA_ZK`` and the hook's default
connection into a connect string; both must equal every broker's ``KAFKA_ZOOKEEPER_CONNECT``
(same ZooKeeper service and port, same chroot), or the runbooks would read an empty cluster.
"""

from __future__ import annotations

from typing import Any

import pytest

from kafka_zk.connect import parse_connect_string
from tests.deploy.compose_file import environment, load


@pytest.fixture(scope="module")
def services() -> dict[str, dict[str, Any]]:
    return load()["services"]


def brokers(services: dict[str, dict[str, Any]]) -> dict[str, dict[str, str]]:
    return {n: environment(s) for n, s in services.items() if "KAFKA_BROKER_ID" in environment(s)}


def test_zookeeper_hook_reads_the_connection_as_the_brokers_connect(
        services: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    from operators.hooks.zookeeper import ZooKeeperHook

    env = environment(services["airflow-scheduler"])
    for conn_id in ("kafka_zk", ZooKeeperHook.default_conn_name):
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", env[f"AIRFLOW_CONN_{conn_id.upper()}"])
        hook = ZooKeeperHook(zk_conn_id=conn_id)
        for name, broker in brokers(services).items():
            assert parse_connect_string(hook.connect_string) == \
                parse_connect_string(broker["KAFKA_ZOOKEEPER_CONNECT"]), f"{conn_id} vs {name}"
