"""Znode ages for the stuck-checks: one pipelined ``exists`` (Stat) per admin node, marker and moving topic.

Ages compare the ZooKeeper server's ``ctime``/``mtime`` with the local clock, so clock skew between
the two shifts every threshold by that skew. A node that vanished since the snapshot has no age.

Failure: ZooKeeper errors are translated as in :mod:`kafka_zk.snapshot`.
"""

from __future__ import annotations

import time

from kazoo.client import KazooClient

from kafka_zk import paths
from kafka_zk.health.model import ZnodeAge, ZnodeAges
from kafka_zk.model import ClusterSnapshot
from kafka_zk.snapshot import pipelined


def read_znode_ages(client: KazooClient, snapshot: ClusterSnapshot, now_ms: int | None = None) -> ZnodeAges:
    """Stat (pipelined ``exists``) of the admin nodes, delete markers and reassigning topic znodes."""

    reassigning = sorted({p.topic for p in snapshot.partitions() if p.is_reassigning})
    wanted = [paths.REASSIGN_PARTITIONS, paths.PREFERRED_REPLICA_ELECTION]
    wanted += [paths.delete_topic_marker(t) for t in sorted(snapshot.delete_markers)]
    wanted += [paths.topic(t) for t in reassigning]
    stats = pipelined(client, "exists", wanted)
    now = int(time.time() * 1000) if now_ms is None else int(now_ms)

    def age(path: str) -> ZnodeAge | None:
        st = stats.get(path)
        return None if st is None else ZnodeAge(path, int(st.ctime), int(st.mtime))

    markers = {t: a for t in snapshot.delete_markers if (a := age(paths.delete_topic_marker(t)))}
    topics = {t: a for t in reassigning if (a := age(paths.topic(t)))}
    return ZnodeAges(now, age(paths.REASSIGN_PARTITIONS), age(paths.PREFERRED_REPLICA_ELECTION), markers, topics)
