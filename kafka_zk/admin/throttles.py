"""Replication throttles for a run: apply per wave, remember what was there, restore exactly.

:func:`apply_throttles` merges the wave's throttled replicas into each topic's
``leader/follower.replication.throttled.replicas`` (user pairs and ``*`` kept) and sets the
leader/follower rates (and optionally the log-dir rate) on the given brokers. It returns a
:class:`ThrottleRecord`: for every entity touched, the value each key had *before the run*
(the first wave's view is kept when later waves pass the previous record) and what we added.
The record is plain JSON (:meth:`ThrottleRecord.save` / :meth:`ThrottleRecord.load`) so it
lives in the run folder and survives a crashed task.

:func:`remove_throttles` restores exactly the pre-run values, removing only what we added:
a topic list still equal to what we produced goes back to its old value; a list someone edited
meanwhile loses only our pairs; a broker rate someone changed during the run is left alone.
It is idempotent (a second call writes nothing). Every config write is followed by one change
notification; entities whose config would not change are not written at all.

:func:`remove_exact_keys` removes throttles someone else left (the stuck_reassignment runbook's
approved ``throttles`` fix): exactly the approved keys whose value is still the approved one.

Failure: bad rates or unknown topics raise before the first write (:class:`InvalidInput`,
:class:`TopicNotFound`); ZooKeeper errors as in :mod:`kafka_zk.writer`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

from kazoo.client import KazooClient

from kafka_zk import paths
from kafka_zk.admin.configs import describe_config
from kafka_zk.authority import OwnThrottlesOnly
from kafka_zk.errors import InvalidInput, InvalidPayload, TopicNotFound
from kafka_zk.throttle_lists import (FOLLOWER_KEY, LEADER_KEY, ReplicaPair, TopicThrottle,
                                     merge_replica_list, subtract_replica_list)
from kafka_zk.topic_configs import FOLLOWER_RATE, LEADER_RATE, LOG_DIRS_RATE, check_rate
from kafka_zk.writer import ZkWriter


@dataclass(frozen=True)
class TopicThrottleRecord:
    """One topic: the two lists before the run (``None`` = key absent) and the pairs we added."""

    topic: str
    leader_before: str | None
    follower_before: str | None
    leader_ours: frozenset[ReplicaPair] = frozenset()
    follower_ours: frozenset[ReplicaPair] = frozenset()


@dataclass(frozen=True)
class BrokerThrottleRecord:
    """One broker entity (id or ``<default>``): each rate key's pre-run value and the value we set."""

    broker: str
    before: Mapping[str, str | None] = field(default_factory=dict)
    ours: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ThrottleRecord:
    """Everything :func:`remove_throttles` needs to undo a run's throttles exactly."""

    topics: tuple[TopicThrottleRecord, ...] = ()
    brokers: tuple[BrokerThrottleRecord, ...] = ()

    def topic(self, name: str) -> TopicThrottleRecord | None:
        return next((t for t in self.topics if t.topic == name), None)

    def broker(self, entity: str) -> BrokerThrottleRecord | None:
        return next((b for b in self.brokers if b.broker == entity), None)

    def teardown_authority(self, where: str) -> OwnThrottlesOnly:
        """The authority of a teardown of these throttles (``where``: the record's file, for messages)."""
        return OwnThrottlesOnly(frozenset({f"topics/{t.topic}" for t in self.topics}
                                          | {f"brokers/{b.broker}" for b in self.brokers}), where)

    def to_json(self) -> str:
        def pairs(s: frozenset[ReplicaPair]) -> list[list[int]]:
            return [list(p) for p in sorted(s)]
        doc = {"version": 1,
               "topics": [{**asdict(t), "leader_ours": pairs(t.leader_ours),
                           "follower_ours": pairs(t.follower_ours)} for t in self.topics],
               "brokers": [{"broker": b.broker, "before": dict(b.before), "ours": dict(b.ours)}
                           for b in self.brokers]}
        return json.dumps(doc, indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "ThrottleRecord":
        try:
            doc = json.loads(text)
            topics = tuple(TopicThrottleRecord(
                t["topic"], t["leader_before"], t["follower_before"],
                frozenset((int(p), int(b)) for p, b in t["leader_ours"]),
                frozenset((int(p), int(b)) for p, b in t["follower_ours"])) for t in doc["topics"])
            brokers = tuple(BrokerThrottleRecord(str(b["broker"]), dict(b["before"]), dict(b["ours"]))
                            for b in doc["brokers"])
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            raise InvalidPayload(f"throttle record: not a record written by ThrottleRecord.save "
                                 f"({type(exc).__name__}: {str(exc)[:200]})") from None
        return cls(topics, brokers)

    def save(self, path: str | Path) -> None:
        path = Path(path)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(self.to_json(), encoding="utf-8")
        tmp.replace(path)

    @classmethod
    def load(cls, path: str | Path) -> "ThrottleRecord":
        return cls.from_json(Path(path).read_text(encoding="utf-8"))


def _check_rate(name: str, rate: int | None) -> None:
    if rate is not None:
        check_rate(rate, name)


def _topic_exists(client: KazooClient, name: str) -> bool:
    return client.exists(paths.topic(name)) is not None


def apply_throttles(writer: ZkWriter, throttles: Iterable[TopicThrottle], brokers: Iterable[int],
                    rate: int | None, log_dirs_rate: int | None = None,
                    record: ThrottleRecord | None = None) -> ThrottleRecord:
    """Merge ``throttles`` into the topics' lists and set rates on ``brokers``; returns the record.

    Pass the record of earlier waves as ``record`` so pre-run values are kept from the first wave.
    ``rate=None`` leaves the leader/follower rates alone.
    """
    record = record or ThrottleRecord()
    throttles = list(throttles)
    brokers = sorted(set(brokers))
    _check_rate("throttle rate", rate)
    _check_rate("log-dirs throttle rate", log_dirs_rate)
    for t in throttles:
        if not _topic_exists(writer.client, t.topic):
            raise TopicNotFound(f"Topic '{t.topic}' does not exist: cannot throttle its replicas")
    topics = {t.topic: t for t in record.topics}
    for t in throttles:
        current = describe_config(writer.client, "topics", t.topic)
        old = topics.get(t.topic) or TopicThrottleRecord(t.topic, current.get(LEADER_KEY),
                                                          current.get(FOLLOWER_KEY))
        new = dict(current)
        new[LEADER_KEY] = merge_replica_list(current.get(LEADER_KEY), t.leader)
        new[FOLLOWER_KEY] = merge_replica_list(current.get(FOLLOWER_KEY), t.follower)
        topics[t.topic] = TopicThrottleRecord(t.topic, old.leader_before, old.follower_before,
                                              old.leader_ours | t.leader, old.follower_ours | t.follower)
        if new != current:
            writer.write_config("topics", t.topic, new)
    wanted = {}
    if rate is not None:
        wanted.update({LEADER_RATE: str(rate), FOLLOWER_RATE: str(rate)})
    if log_dirs_rate is not None:
        wanted[LOG_DIRS_RATE] = str(log_dirs_rate)
    broker_records = {b.broker: b for b in record.brokers}
    for b in (str(x) for x in brokers):
        if not wanted:
            break
        current = describe_config(writer.client, "brokers", b)
        old = broker_records.get(b) or BrokerThrottleRecord(b)
        before = dict(old.before)
        for key in wanted:
            before.setdefault(key, current.get(key))
        broker_records[b] = BrokerThrottleRecord(b, before, {**old.ours, **wanted})
        new = {**current, **wanted}
        if new != current:
            writer.write_config("brokers", b, new)
    return ThrottleRecord(tuple(topics[k] for k in sorted(topics)),
                          tuple(broker_records[k] for k in sorted(broker_records, key=_entity_key)))


def _entity_key(entity: str) -> tuple[int, str]:
    return (0, f"{int(entity):012d}") if entity.isascii() and entity.isdigit() else (1, entity)


def _set_or_remove(cfg: dict[str, str], key: str, value: str | None) -> None:
    if value is None:
        cfg.pop(key, None)
    else:
        cfg[key] = value


def remove_throttles(writer: ZkWriter, record: ThrottleRecord) -> list[str]:
    """Restore the pre-run throttle values recorded in ``record``; returns entity paths written."""
    written = []
    for t in record.topics:
        if not _topic_exists(writer.client, t.topic):
            continue  # deleted during the run: its config went with it
        current = describe_config(writer.client, "topics", t.topic)
        new = dict(current)
        _set_or_remove(new, LEADER_KEY,
                       subtract_replica_list(current.get(LEADER_KEY), t.leader_ours, t.leader_before))
        _set_or_remove(new, FOLLOWER_KEY,
                       subtract_replica_list(current.get(FOLLOWER_KEY), t.follower_ours, t.follower_before))
        if new != current:
            writer.write_config("topics", t.topic, new)
            written.append(paths.topic_config(t.topic))
    for b in record.brokers:
        current = describe_config(writer.client, "brokers", b.broker)
        new = dict(current)
        for key, ours in b.ours.items():
            if current.get(key) == ours:
                _set_or_remove(new, key, b.before.get(key))
        if new != current:
            writer.write_config("brokers", b.broker, new)
            written.append(paths.broker_config(b.broker))
    return written


def remove_exact_keys(writer: ZkWriter, entity_type: str, entity_name: str,
                      keys: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """Delete each of ``keys`` from ``/config/<entity_type>/<entity_name>`` whose value is still the
    given one (a throttle someone else left, approved for removal); a key since changed or gone is
    left as it is. One config write (and notification) when anything goes, none otherwise.
    Returns (removed keys, keys left as they are with why)."""
    if entity_type == "topics" and not _topic_exists(writer.client, entity_name):
        return [], [f"{k}: topic {entity_name} is gone" for k in sorted(keys)]
    current = describe_config(writer.client, entity_type, entity_name)
    removed = [k for k in sorted(keys) if current.get(k) == keys[k]]
    left = [f"{k}: now {current[k]!r}, approved {keys[k]!r} (changed since the diagnosis: not touched)"
            if k in current else f"{k}: already gone" for k in sorted(keys) if k not in removed]
    if removed:
        writer.write_config(entity_type, entity_name, {k: v for k, v in current.items() if k not in removed})
    return removed, left


def throttles_left(client: KazooClient, record: ThrottleRecord) -> dict[str, dict[str, str]]:
    """Our throttle values still present (for health checks and tests): entity path → key → value."""
    out: dict[str, dict[str, str]] = {}
    for t in record.topics:
        if not _topic_exists(client, t.topic):
            continue
        cfg = describe_config(client, "topics", t.topic)
        for key, ours, before in ((LEADER_KEY, t.leader_ours, t.leader_before),
                                  (FOLLOWER_KEY, t.follower_ours, t.follower_before)):
            if cfg.get(key) != before and subtract_replica_list(cfg.get(key), ours, before) != cfg.get(key):
                out.setdefault(paths.topic_config(t.topic), {})[key] = cfg[key]
    for b in record.brokers:
        cfg = describe_config(client, "brokers", b.broker)
        for key, ours in b.ours.items():
            if cfg.get(key) == ours and b.before.get(key) != ours:
                out.setdefault(paths.broker_config(b.broker), {})[key] = ours
    return out
