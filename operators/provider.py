"""Provider metadata: makes Airflow's UI offer the ``kafka_zookeeper`` connection type.

Airflow discovers connection types through the ``apache_airflow_provider`` entry point of an
installed package; this function is what that entry point must name
(``operators.provider:get_provider_info``). Without the entry point the hook still works with
connections defined by environment variable or CLI; only the UI form lacks the type.

Failure: none at run time; ``tests/operators`` validates the dict against Airflow's
``provider_info.schema.json``.
"""

from __future__ import annotations

from typing import Any


def get_provider_info() -> dict[str, Any]:
    return {
        "package-name": "kafka-runbooks",
        "name": "Kafka Runbooks",
        "description": "Runbook automation for Apache Kafka clusters in ZooKeeper mode.",
        "versions": ["0.1.0"],
        "connection-types": [
            {"hook-class-name": "operators.hooks.zookeeper.ZooKeeperHook", "connection-type": "kafka_zookeeper"},
        ],
    }
