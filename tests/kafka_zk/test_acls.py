"""Kafka 2.4's znode ACL rule (ZkData.defaultAcls), pinned path by path and as a property."""

from __future__ import annotations

from hypothesis import given, strategies as st
from kazoo.security import ACL, Id

from kafka_zk.acls import default_acls, sensitive_path

OPEN = [ACL(31, Id("world", "anyone"))]
CREATOR_ALL = ACL(31, Id("auth", ""))
WORLD_READ = ACL(1, Id("world", "anyone"))


def test_unsecured_cluster_creates_everything_open():
    for path in ("/admin/reassign_partitions", "/config/users/alice", "/consumers", "/brokers/topics/t"):
        assert default_acls(path, secure=False) == OPEN


def test_secured_cluster_gives_creator_all_plus_world_read_except_sensitive_roots_and_consumers():
    for path in ("/admin/reassign_partitions", "/admin/preferred_replica_election", "/admin/delete_topics/t",
                 "/brokers/topics/t", "/config/topics/t", "/config/changes/config_change_", "/config",
                 "/config/clients/c", "/controller", "/isr_change_notification/isr_change_"):
        assert default_acls(path, secure=True) == [CREATOR_ALL, WORLD_READ], path
    for path in ("/config/users", "/config/users/alice", "/config/brokers", "/config/brokers/1",
                 "/config/brokers/<default>", "/delegation_token/tokens", "/delegation_token/tokens/x"):
        assert default_acls(path, secure=True) == [CREATOR_ALL], path
    assert default_acls("/consumers", secure=True) == OPEN
    assert default_acls("/consumers/group", secure=True) == [CREATOR_ALL, WORLD_READ]  # only the root is open
    assert default_acls("/delegation_token", secure=True) == [CREATOR_ALL, WORLD_READ]


@given(st.lists(st.text(alphabet="abcdefgz_.-0123456789<>", min_size=1, max_size=8), min_size=1, max_size=4))
def test_secured_acl_always_gives_the_creator_everything_and_world_read_only_outside_sensitive_roots(parts):
    path = "/" + "/".join(parts)
    acl = default_acls(path, secure=True)
    if path == "/consumers":
        assert acl == OPEN
        return
    assert acl[0] == CREATOR_ALL
    assert (WORLD_READ in acl) == (not sensitive_path(path))
    assert all(a.perms in (31, 1) for a in acl)
