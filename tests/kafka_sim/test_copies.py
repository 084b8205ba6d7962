"""Emulated copies on a shared ZooKeeper (kafka_sim/copies.py): a copy's chroot is removed whole,
and only copies with no live broker and older than the bound are taken for stale (issue 38:
every rehearsal's copy used to stay, 4,192 znodes after one 2,000-partition rehearsal)."""

from __future__ import annotations

import uuid

import pytest
from kazoo.client import KazooClient

from kafka_sim.copies import remove_copy, stale_copies


@pytest.fixture
def root(zk_server):
    client = KazooClient(hosts=zk_server.connect_string, timeout=10)
    client.start(timeout=10)
    yield client
    client.stop()
    client.close()


def _copy(root: KazooClient, prefix: str, topics: int, live_broker: bool) -> str:
    chroot = f"{prefix}{uuid.uuid4().hex[:8]}"
    root.create(f"{chroot}/brokers/ids", makepath=True)
    for t in range(topics):
        for p in range(3):
            root.create(f"{chroot}/brokers/topics/t{t}/partitions/{p}/state", b"{}", makepath=True)
    if live_broker:
        root.create(f"{chroot}/brokers/ids/1", b"{}", ephemeral=True)
    return chroot


def test_a_copy_is_removed_whole_and_nothing_else(root: KazooClient) -> None:
    prefix = f"/kafka-rehearsal-{uuid.uuid4().hex[:4]}-"
    copy, other = _copy(root, prefix, 20, False), _copy(root, prefix, 1, False)
    assert remove_copy(root, copy) == 4 + 20 * (2 + 3 * 2)    # chroot, brokers, ids, topics; per topic: itself,
    #                                                          partitions, and each partition with its state
    assert root.exists(copy) is None and root.exists(other) is not None
    assert remove_copy(root, other) > 0 and root.exists(other) is None
    with pytest.raises(ValueError, match="not a top-level chroot"):
        remove_copy(root, "/")


def test_only_copies_without_a_live_broker_and_old_enough_are_stale(root: KazooClient) -> None:
    prefix = f"/kafka-rehearsal-{uuid.uuid4().hex[:4]}-"
    dead, live = _copy(root, prefix, 1, False), _copy(root, prefix, 1, True)
    root.create(f"/unrelated-{uuid.uuid4().hex[:6]}")
    assert stale_copies(root, prefix) == []                       # both younger than the bound
    assert stale_copies(root, prefix, stale_after_s=0) == [dead]  # the live one has a broker registered
    for chroot in (dead, live):
        remove_copy(root, chroot)
