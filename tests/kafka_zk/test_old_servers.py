"""ZooKeeper 3.4/3.5 through the loopback proxy: the version is learned without breaking the
session, reads lost with a connection are read again, and multiRead is never sent to them."""

import threading
import time

import pytest
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import UnimplementedError

from kafka_zk import multi_read, server_features
from kafka_zk.connect import close, connect
from kafka_zk.snapshot import pipelined, read_data, read_snapshot
from tests.zk_helpers import register_brokers


def _tree(zk, n=300):
    register_brokers(zk, {0: "a", 1: "b"})
    for i in range(n):
        zk.create(f"/brokers/topics/t{i}", b'{"version":1,"partitions":{"0":[0,1]}}')
        zk.create(f"/brokers/topics/t{i}/partitions/0/state",
                  b'{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0,"isr":[0,1]}',
                  makepath=True)


def _watch_states(client):
    seen = []
    client.add_listener(seen.append)
    return seen


def _srvr_when_serving(port):
    deadline = time.monotonic() + 30
    while True:  # a server that just started says "not currently serving requests" for a moment
        text = server_features.four_letter_word("127.0.0.1", port)
        if "not currently serving" not in text or time.monotonic() > deadline:
            return text
        time.sleep(0.1)


def test_srvr_reports_the_old_version_and_the_ensemble_is_answered_no(old_zk, zk_server):
    text = _srvr_when_serving(old_zk.port)
    assert text.startswith(f"Zookeeper version: {old_zk.mode}.") and "Mode: standalone" in text
    client = KazooClient(hosts=old_zk.hosts)  # not started: only its host list is used
    server_features.forget(client)
    features = server_features.ensemble_features(client)
    assert not features.multi_read and [(s.version[:2], s.how) for s in features.servers] == \
        [(tuple(int(x) for x in old_zk.mode.split(".")), "srvr")]
    direct = KazooClient(hosts=zk_server.connect_string)
    assert server_features.supports_multi_read(direct)  # Debian's 3.8 has it


def test_the_version_check_never_closes_the_session(old_zk, old_zk_connect, zk):
    _tree(zk)
    server_features.forget()
    before = len(old_zk.refused)
    client = connect(old_zk_connect)
    try:
        states = _watch_states(client)
        session = client.client_id
        snap = read_snapshot(client)
        assert len(snap.topics) == 300 and snap.topics["t7"].partitions[0].isr == (0, 1)
        assert old_zk.refused[before:] == []  # nothing the old server lacks was sent
        assert states == [] and client.client_id == session and client.state == KazooState.CONNECTED
    finally:
        close(client)


def test_the_proxy_closes_the_connection_on_multi_read_as_3_5_does(zk_proxies, zk_chroot):
    """What the old probe did to users: UNIMPLEMENTED, then the connection is gone."""
    proxy = zk_proxies["3.5"]
    before = len(proxy.refused)
    client = connect(proxy.hosts + zk_chroot)
    try:
        lost = threading.Event()
        client.add_listener(lambda s: s == KazooState.SUSPENDED and lost.set())
        with pytest.raises(UnimplementedError):
            multi_read.submit(client, ["/"]).get(timeout=10)
        assert lost.wait(10) and [op for op, _ in proxy.refused[before:]] == [22]
        assert client.exists("/") is not None  # kazoo reconnects; the session survived
    finally:
        close(client)


def test_the_throw_away_probe_answers_without_touching_the_session(old_zk, zk_server, zk_chroot):
    before = len(old_zk.refused)
    client = connect(old_zk.hosts + zk_chroot)
    try:
        states = _watch_states(client)
        assert server_features.probe_multi_read("127.0.0.1", old_zk.port) is False
        assert [op for op, _ in old_zk.refused[before:]] == [22]  # refused on the probe's own connection
        del old_zk.refused[before:]
        assert client.exists("/") is not None and states == []
    finally:
        close(client)
    assert server_features.probe_multi_read(zk_server.host, zk_server.port) is True
    assert server_features.probe_multi_read("127.0.0.1", 1, timeout=1) is None


def test_reads_lost_with_the_connection_are_read_again(zk_proxies, zk_chroot, zk):
    _tree(zk, 200)
    proxy = zk_proxies["3.5"]
    before = len(proxy.refused)
    client = connect(proxy.hosts + zk_chroot)
    try:
        wanted = [f"/brokers/topics/t{i}/partitions/0/state" for i in range(200)] + ["/nope"]
        multi_read.submit(client, ["/"])  # the connection is closed under the reads below
        got = pipelined(client, "get", wanted)
        assert [op for op, _ in proxy.refused[before:]] == [22]
        assert got["/nope"] is None and all(got[p][0].startswith(b'{"controller_epoch"') for p in wanted[:-1])
    finally:
        del proxy.refused[before:]
        close(client)


def test_a_server_that_refuses_multi_read_after_all_is_read_with_plain_gets(zk_proxies, zk_chroot, zk):
    _tree(zk, 50)
    proxy = zk_proxies["3.4"]
    before = len(proxy.refused)
    client = connect(proxy.hosts + zk_chroot)
    try:
        wanted = [f"/brokers/topics/t{i}" for i in range(50)]
        got = read_data(client, wanted, multi=True)
        assert [op for op, _ in proxy.refused[before:]] == [22] and len(got) == 50
        assert not server_features.supports_multi_read(client)  # remembered for the ensemble
    finally:
        del proxy.refused[before:]
        close(client)
