"""The bulk getData reader on its own session: same answers as one-by-one kazoo reads, on
ZooKeeper 3.8 and through the 3.5/3.4 proxies; what it cannot read is left to kazoo."""

import pytest
from kazoo.security import make_digest_acl

from kafka_zk import bulk_reader
from kafka_zk.connect import close, connect
from kafka_zk.errors import KafkaZkError
from kafka_zk.snapshot import read_data


def _one_by_one(zk, paths):
    out = {}
    for p in paths:
        got = zk.exists(p)
        out[p] = None if got is None else zk.get(p)
    return out


@pytest.mark.parametrize("via", ["3.8", "3.5", "3.4"])
def test_reads_what_one_by_one_gets_read(via, zk, zk_server, zk_chroot, zk_proxies):
    for i in range(300):
        zk.create(f"/n/{i}", f"v{i}".encode() * (i % 7), makepath=True)
    zk.create("/n/empty")
    wanted = ["/", "/n", "/n/empty", "/gone"] + [f"/n/{i}" for i in range(300)]
    hosts = zk_server.connect_string if via == "3.8" else zk_proxies[via].hosts
    client = connect(hosts + zk_chroot)
    try:
        got = bulk_reader.read_many(client, wanted, window=64)
        assert got.unread == [] and got.found == _one_by_one(zk, wanted)
        assert read_data(client, wanted) == got.found
    finally:
        close(client)


def _create(zk, paths: list[str], locked) -> None:
    """``paths`` with data, those ``locked(i)`` picks readable only with the sre:secret digest."""
    acl = [make_digest_acl("sre", "secret", all=True)]
    zk.add_auth("digest", "sre:secret")
    for i, path in enumerate(paths):
        zk.create(path, b"x", acl=acl if locked(i) else None, makepath=True)


def test_digest_credentials_are_sent_and_a_refusal_is_left_to_kazoo(zk, zk_connect):
    wanted = [f"/locked/{i}" for i in range(100)]
    _create(zk, wanted, lambda i: True)
    allowed = connect(zk_connect, auth=[("digest", "sre:secret")])
    stranger = connect(zk_connect)
    try:
        assert bulk_reader.read_many(allowed, wanted).found == {p: zk.get(p) for p in wanted}
        refused = bulk_reader.read_many(stranger, wanted)
        assert refused.unread == wanted and "-102" in refused.reason  # NoAuth
        with pytest.raises(KafkaZkError, match="not authorised"):
            read_data(stranger, wanted, multi=False)
    finally:
        close(allowed)
        close(stranger)


def test_several_sessions_share_the_read_and_each_is_opened_once(zk, zk_chroot, zk_proxies):
    for i in range(600):
        zk.create(f"/m/{i}", f"v{i}".encode(), makepath=True)
    wanted = [f"/m/{i}" for i in range(600)] + ["/m/gone"]
    proxy = zk_proxies["3.5"]
    client = connect(proxy.hosts + zk_chroot)
    try:
        before = proxy.connections
        got = bulk_reader.read_many(client, wanted, window=16, sessions=3)
        assert proxy.connections - before == 3
        assert got.unread == [] and got.found == _one_by_one(zk, wanted)
    finally:
        close(client)


def test_a_session_refused_mid_read_leaves_only_its_own_run_unread(zk, zk_connect):
    wanted = [f"/half/{i:03d}" for i in range(200)]
    _create(zk, wanted, lambda i: i >= 100)
    stranger = connect(zk_connect)
    try:
        got = bulk_reader.read_many(stranger, wanted, window=8, sessions=2)
        assert sorted(got.found) == wanted[:100] and got.unread == wanted[100:]
        assert "-102" in got.reason
    finally:
        close(stranger)


def test_how_many_sessions_a_read_opens():
    assert bulk_reader.sessions_for(10) == 1
    assert bulk_reader.sessions_for(2 * bulk_reader.PER_SESSION) == 2
    assert bulk_reader.sessions_for(10**6) == bulk_reader.SESSIONS
