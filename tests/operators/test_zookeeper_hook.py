"""ZooKeeperHook: a Connection (JSON env var) → a kazoo client on the right chroot, on a real ZooKeeper."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import make_acl, make_digest_acl

from kafka_zk.errors import InvalidInput
from operators.hooks.zookeeper import ZooKeeperHook
from tests.zk_helpers import register_brokers


def _conn(monkeypatch: pytest.MonkeyPatch, conn_id: str, **fields) -> str:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "kafka_zookeeper", **fields}))
    return conn_id


def test_connect_string_from_hosts_default_port_and_chroot(monkeypatch: pytest.MonkeyPatch) -> None:
    _conn(monkeypatch, "zk_a", host="zk1,zk2:2182, zk3", port=2190, extra={"chroot": "/kafka/prod/"})
    assert ZooKeeperHook("zk_a").connect_string == "zk1:2190,zk2:2182,zk3:2190/kafka/prod"
    _conn(monkeypatch, "zk_b", host="127.0.0.1")
    assert ZooKeeperHook("zk_b").connect_string == "127.0.0.1:2181"


@pytest.mark.parametrize("fields, fragment", [
    ({"host": ""}, "has no host"),
    ({"host": "zk1:99999"}, "is not host:port"),
    ({"host": "zk1", "extra": {"chroot": "/bad chroot"}}, "is not a valid path"),
    ({"host": "zk1", "extra": {"session_timeout": 0}}, "session_timeout"),
    ({"host": "zk1", "extra": {"connect_timeout": "soon"}}, "connect_timeout"),
    ({"host": "zk1", "extra": {"digest": "no-colon"}}, "user:password"),
])
def test_bad_connection_fields_are_refused_naming_the_field(monkeypatch: pytest.MonkeyPatch, fields: dict,
                                                            fragment: str) -> None:
    _conn(monkeypatch, "zk_bad", **fields)
    with pytest.raises(InvalidInput) as err:
        ZooKeeperHook("zk_bad").get_conn()
    assert fragment in str(err.value) and "zk_bad" in str(err.value)


def test_get_conn_reads_the_chrooted_cluster_and_test_connection_reports_brokers(
        zk: KazooClient, zk_conn_id: str) -> None:
    register_brokers(zk, {1: "a", 2: "b"})
    zk.create("/controller", b'{"version":1,"brokerid":2,"timestamp":"1"}')
    with ZooKeeperHook(zk_conn_id) as hook:
        client = hook.get_conn()
        assert sorted(client.get_children("/brokers/ids")) == ["1", "2"]
        assert hook.get_conn() is client  # cached for the hook's life
    ok, message = ZooKeeperHook(zk_conn_id).test_connection()
    assert ok, message
    assert "brokers [1, 2]" in message and "controller" in message


def test_test_connection_fails_clearly_on_an_empty_chroot_and_on_a_missing_one(
        zk_server, zk_chroot: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _conn(monkeypatch, "zk_empty", host=zk_server.connect_string, extra={"chroot": zk_chroot})
    ok, message = ZooKeeperHook("zk_empty").test_connection()
    assert not ok and "no broker is registered" in message
    _conn(monkeypatch, "zk_missing", host=zk_server.connect_string, extra={"chroot": zk_chroot + "/nope"})
    ok, message = ZooKeeperHook("zk_missing").test_connection()
    assert not ok and "does not exist" in message


def test_digest_credentials_from_login_password_reach_an_acl_protected_znode(
        zk_server, zk_chroot: str, zk: KazooClient, monkeypatch: pytest.MonkeyPatch) -> None:
    acl = make_digest_acl("kafka", "s3cret", all=True)
    zk.create("/protected", b"x", acl=[acl, make_acl("world", "anyone", read=True)])
    with pytest.raises(NoAuthError):
        zk.set("/protected", b"y")
    _conn(monkeypatch, "zk_auth", host=zk_server.connect_string, login="kafka", password="s3cret",
          extra={"chroot": zk_chroot})
    with ZooKeeperHook("zk_auth") as hook:
        hook.get_conn().set("/protected", b"y")
    _conn(monkeypatch, "zk_auth2", host=zk_server.connect_string, extra={"chroot": zk_chroot,
                                                                         "digest": "kafka:s3cret"})
    with ZooKeeperHook("zk_auth2") as hook:
        hook.get_conn().set("/protected", b"z")
    assert zk.get("/protected")[0] == b"z"


def test_ui_field_behaviour_names_the_fields_an_sre_fills() -> None:
    ui = ZooKeeperHook.get_ui_field_behaviour()
    assert ui["relabeling"]["host"] == "ZooKeeper hosts"
    assert "chroot" in ui["placeholders"]["extra"]
    assert ZooKeeperHook.conn_name_attr == "zk_conn_id" and ZooKeeperHook.conn_type == "kafka_zookeeper"


def test_provider_info_declares_the_connection_type_in_airflows_schema() -> None:
    import jsonschema

    import airflow
    from operators.provider import get_provider_info

    schema = json.loads((Path(airflow.__file__).parent / "provider_info.schema.json").read_text())
    info = get_provider_info()
    jsonschema.validate(info, schema)
    [conn] = info["connection-types"]
    assert conn["connection-type"] == ZooKeeperHook.conn_type
    module, _, name = conn["hook-class-name"].rpartition(".")
    assert getattr(__import__(module, fromlist=[name]), name) is ZooKeeperHook
