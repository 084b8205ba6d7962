"""Batched topic deletion and its progress (docs/zookeeper.md §1.9, §2.9, §8.6).

* :func:`mark_for_deletion` — check every topic first (exists, not internal unless ``force``,
  not being reassigned unless ``allow_reassigning``), then create one
  ``/admin/delete_topics/<t>`` marker each; markers already present count as requested.
* :func:`deletion_status` — per topic ``deleted`` (topic znode, config node and marker all
  gone), ``pending`` (marker present), or ``not_deleted`` (marker gone but the topic is still
  there: the cluster has ``delete.topic.enable=false``, whose controller removes markers at once).

Failure: :class:`TopicNotFound` / :class:`InvalidInput` naming every refused topic, nothing written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Literal

from kazoo.client import KazooClient

from kafka_zk import paths
from kafka_zk.errors import InvalidInput, TopicNotFound
from kafka_zk.model import INTERNAL_TOPICS, ClusterSnapshot
from kafka_zk.snapshot import pipelined
from kafka_zk.writer import ZkWriter

DeletionState = Literal["deleted", "pending", "not_deleted"]


@dataclass(frozen=True)
class TopicDeletionState:
    topic: str
    state: DeletionState
    topic_znode: bool
    config_znode: bool
    marker: bool


def mark_for_deletion(writer: ZkWriter, snapshot: ClusterSnapshot, topics: Iterable[str], force: bool = False,
                      allow_reassigning: bool = False) -> dict[str, str]:
    """Markers for ``topics``; returns topic → ``marked`` | ``already_marked`` (``{}`` for none)."""
    names = list(dict.fromkeys(topics))
    missing = [t for t in names if t not in snapshot.topics]
    if missing:
        raise TopicNotFound(f"Topic(s) {', '.join(missing)} do not exist; remove them from the list")
    internal = [t for t in names if t in INTERNAL_TOPICS]
    if internal and not force:
        raise InvalidInput(f"Topic(s) {', '.join(internal)} are kafka internal topics and are not allowed to be "
                           "marked for deletion.")
    if not allow_reassigning:
        moving = sorted({tp.topic for tp in snapshot.reassigning_partitions() if tp.topic in names}
                        | {e.topic for e in (snapshot.reassignment.entries if snapshot.reassignment else ())
                           if e.topic in names})
        if moving:
            raise InvalidInput(f"Topic(s) {', '.join(moving)} are being reassigned: wait for the reassignment "
                               "to finish before deleting them")
    out = {}
    for t in names:
        if t in snapshot.delete_markers or writer.client.exists(paths.delete_topic_marker(t)) is not None:
            out[t] = "already_marked"
            continue
        writer.create(paths.delete_topic_marker(t), None, makepath=True)
        out[t] = "marked"
    return out


def deletion_status(client: KazooClient, topics: Iterable[str]) -> dict[str, TopicDeletionState]:
    """Where each topic's deletion stands, read from ZooKeeper (pipelined ``exists`` reads)."""
    names = list(dict.fromkeys(topics))
    znodes = [p for t in names for p in (paths.topic(t), paths.topic_config(t), paths.delete_topic_marker(t))]
    raw = pipelined(client, "exists", znodes)
    out = {}
    for t in names:
        tz = raw[paths.topic(t)] is not None
        cz = raw[paths.topic_config(t)] is not None
        mk = raw[paths.delete_topic_marker(t)] is not None
        state: DeletionState = "pending" if mk else ("not_deleted" if tz else "deleted")
        if state == "deleted" and cz:
            state = "pending"  # config node goes after the topic node: still finishing
        out[t] = TopicDeletionState(t, state, tz, cz, mk)
    return out
