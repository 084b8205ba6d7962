"""Fixtures of the secured-cluster tests: ONE ZooKeeper per session that requires SASL.

The server (a separate instance from the shared ``zk_server``) knows two DIGEST-MD5 users:
``kafka`` (the broker principal: emulated brokers, controller, our tools) and ``reader`` (an
authenticated principal that is not Kafka's). Every chroot here is created as ``kafka`` with
Kafka's ACLs, as a broker with ``zookeeper.set.acl=true`` creates its chroot.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Iterator

import pytest
from kazoo.client import KazooClient

from kafka_zk import acls
from kafka_sim.zookeeper_server import EmbeddedZooKeeper
from kafka_zk.zk_auth import DIGEST_MD5, ZkCredentials
from tests.dags.conftest import airflow_db  # noqa: F401 - the shared Airflow DB fixture

BROKER_USER, BROKER_SECRET = "kafka", "Br0ker-S3cret-7f1c2d"
READER_USER, READER_SECRET = "reader", "Reader-S3cret-90ab"
BROKER = ZkCredentials(DIGEST_MD5, username=BROKER_USER, password=BROKER_SECRET, set_acl=True)
READER = ZkCredentials(DIGEST_MD5, username=READER_USER, password=READER_SECRET)
JAAS_CLIENT = ("Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
               f'  username="{BROKER_USER}"\n  password="{BROKER_SECRET}";\n}};\n')


@pytest.fixture(scope="session")
def secured_zk() -> Iterator[EmbeddedZooKeeper]:
    with EmbeddedZooKeeper(sasl_users={BROKER_USER: BROKER_SECRET, READER_USER: READER_SECRET}) as server:
        yield server


def sasl_client(hosts: str, creds: ZkCredentials = BROKER) -> KazooClient:
    """A plain kazoo client logged in with ``creds`` (tests read ZooKeeper back with it)."""
    client = KazooClient(hosts=hosts, timeout=10, **creds.kazoo_kwargs())
    client.start(timeout=10)
    client.exists("/")  # waits for the SASL login
    return client


def new_secured_chroot(server: EmbeddedZooKeeper) -> str:
    chroot = f"/sec{uuid.uuid4().hex[:12]}"
    root = sasl_client(server.connect_string)
    try:
        root.create(chroot, acl=acls.default_acls(chroot, True))
    finally:
        root.stop()
        root.close()
    return chroot


def secured_connection(server: EmbeddedZooKeeper, chroot: str) -> str:
    """An Airflow connection on ``chroot`` that logs in as the broker principal, with set_acl."""
    conn_id = f"zk_{chroot.strip('/')}"
    os.environ[f"AIRFLOW_CONN_{conn_id.upper()}"] = json.dumps({
        "conn_type": "kafka_zookeeper", "host": server.connect_string, "login": BROKER_USER,
        "password": BROKER_SECRET,
        "extra": {"chroot": chroot, "sasl_mechanism": "DIGEST-MD5", "set_acl": True,
                  "connect_timeout": 10, "session_timeout": 10}})
    return conn_id


@pytest.fixture
def secured_chroot(secured_zk) -> str:
    return new_secured_chroot(secured_zk)


@pytest.fixture
def szk(secured_zk, secured_chroot) -> Iterator[KazooClient]:
    """Plain kazoo, logged in as the broker principal, on a fresh secured chroot."""
    client = sasl_client(secured_zk.connect_string + secured_chroot)
    yield client
    client.stop()
    client.close()


def expected_acls(path: str) -> list:
    """What Kafka 2.4 with zookeeper.set.acl=true gives ``path`` when ``kafka`` creates it, as
    ZooKeeper stores it (the ``auth`` id expanded to the SASL principal), written out literally."""
    from kazoo.security import ACL, Id

    owner = ACL(31, Id("sasl", BROKER_USER))
    world_read = ACL(1, Id("world", "anyone"))
    if path == "/consumers":  # the old consumer path stays open (Kafka's one exception)
        return [ACL(31, Id("world", "anyone"))]
    sensitive = path.startswith(("/config/users", "/config/brokers", "/delegation_token/tokens"))
    return [owner] if sensitive else [owner, world_read]


def all_acls(zk: KazooClient, root: str = "/") -> dict[str, list]:
    """Every znode under ``root`` with its ACL list (plain kazoo)."""
    out = {}

    def walk(p: str) -> None:
        out[p] = zk.get_acls(p)[0]
        for child in sorted(zk.get_children(p)):
            walk(p.rstrip("/") + "/" + child)
    walk(root)
    return out
