"""Emulator fixtures: a cluster factory on the per-test chroot, stopped after the test.

``make_cluster(brokers={0: "a", ...}, speed=..., **spec)`` starts an :class:`EmulatedCluster`
on ``zk_connect`` (the real ZooKeeper of tests/conftest.py); every cluster made is stopped at
teardown. Tests drive the cluster only with plain kazoo writes (the ``zk`` fixture), as a tool
would, never with kafka_zk.admin.
"""

from __future__ import annotations

from typing import Iterator

import pytest

from kafka_sim.cluster import ClusterSpec, EmulatedCluster

RACKS_4 = {0: "a", 1: "b", 2: "a", 3: "b"}


@pytest.fixture
def make_cluster(zk_connect: str) -> Iterator:
    made: list[EmulatedCluster] = []

    def make(brokers=None, **kwargs) -> EmulatedCluster:
        kwargs.setdefault("speed", 50.0)
        kwargs.setdefault("journal", True)
        spec = ClusterSpec(brokers=brokers or RACKS_4, **kwargs)
        cluster = EmulatedCluster(zk_connect, spec)
        made.append(cluster)
        return cluster.start()
    yield make
    for c in made:
        c.stop()
