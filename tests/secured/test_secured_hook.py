"""The ``kafka_zookeeper`` connection on a ZooKeeper that requires SASL: login/password with
``sasl_mechanism``, a JAAS section in ``extra.jaas``, refusals that name the field and never the
secret, and ``set_acl`` giving what the hook's client creates Kafka's ACLs."""

from __future__ import annotations

import json

import pytest

from kafka_zk.errors import InvalidInput, ZkAuthFailed
from kafka_zk.writer import ZkWriter
from kafka_zk.authority import PersonAtKeyboard
from operators.hooks.zookeeper import ZooKeeperHook
from tests.secured.conftest import BROKER_SECRET, BROKER_USER, JAAS_CLIENT, expected_acls

KEYBOARD = PersonAtKeyboard("the test")   # these tests stand for a person at the keyboard


def _conn(monkeypatch, conn_id: str, server, chroot: str, **fields) -> str:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(
        {"conn_type": "kafka_zookeeper", "host": server.connect_string,
         **fields, "extra": {"chroot": chroot, "connect_timeout": 5, **fields.pop("extra", {})}}))
    return conn_id


def test_login_password_with_sasl_mechanism_and_jaas_extra_both_log_in_and_create_with_kafka_acls(
        monkeypatch, secured_zk, secured_chroot, szk):
    a = _conn(monkeypatch, "zk_sasl_a", secured_zk, secured_chroot, login=BROKER_USER, password=BROKER_SECRET,
              extra={"sasl_mechanism": "DIGEST-MD5", "set_acl": True})
    b = _conn(monkeypatch, "zk_sasl_b", secured_zk, secured_chroot,
              extra={"jaas": JAAS_CLIENT, "set_acl": "true"})
    for conn_id, topic in ((a, "ta"), (b, "tb")):
        with ZooKeeperHook(conn_id) as hook:
            ZkWriter(hook.get_conn(), authority=KEYBOARD).write_config("topics", topic, {"retention.ms": "1"})
        assert szk.get_acls(f"/config/topics/{topic}")[0] == expected_acls(f"/config/topics/{topic}")
    ok, message = ZooKeeperHook(a).test_connection()
    assert not ok and "no broker is registered" in message


def test_wrong_password_and_missing_credentials_fail_fast_naming_the_user_not_the_secret(
        monkeypatch, secured_zk, secured_chroot):
    wrong = _conn(monkeypatch, "zk_sasl_wrong", secured_zk, secured_chroot, login=BROKER_USER,
                  password="Wr0ng-" + BROKER_SECRET, extra={"sasl_mechanism": "DIGEST-MD5"})
    with pytest.raises(ZkAuthFailed) as err:
        ZooKeeperHook(wrong).get_conn()
    assert "user 'kafka'" in str(err.value) and BROKER_SECRET not in str(err.value)
    ok, message = ZooKeeperHook(wrong).test_connection()
    assert not ok and "refused the login" in message and BROKER_SECRET not in message
    none = _conn(monkeypatch, "zk_sasl_none", secured_zk, secured_chroot)
    with pytest.raises(ZkAuthFailed, match="requires authentication"):
        ZooKeeperHook(none).get_conn()


@pytest.mark.parametrize("fields, fragment", [
    ({"extra": {"set_acl": True}}, "set_acl=true needs credentials"),
    ({"extra": {"set_acl": "maybe"}}, "set_acl must be true or false"),
    ({"extra": {"sasl_mechanism": "DIGEST-MD5"}, "login": "kafka"}, "needs login"),
    ({"extra": {"sasl_mechanism": "PLAIN"}, "login": "kafka", "password": BROKER_SECRET}, "not supported"),
    ({"extra": {"jaas": JAAS_CLIENT, "jaas_section": "Server"}}, "no section 'Server'"),
    ({"extra": {"jaas": JAAS_CLIENT.replace("username", "user")}}, "needs username"),
])
def test_bad_secured_fields_are_refused_naming_the_field_never_the_secret(monkeypatch, secured_zk, fields,
                                                                          fragment):
    conn_id = _conn(monkeypatch, "zk_sasl_bad", secured_zk, "/nowhere", **fields)
    with pytest.raises(InvalidInput) as err:
        ZooKeeperHook(conn_id).get_conn()
    assert fragment in str(err.value) and "zk_sasl_bad" in str(err.value)
    assert BROKER_SECRET not in str(err.value)
