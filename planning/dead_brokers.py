"""Dead brokers in a decommission or a replacement: which removed brokers are down, what they held,
and which of their partitions have no live in-sync replica left to copy from.

A broker to remove that is not registered under ``/brokers/ids`` but still holds replicas is
*dead* (host or disk gone): its replicas are re-created on other brokers from the surviving
in-sync replicas (the partitions' live leaders). A partition whose ISR names no registered broker
(its only in-sync replica was on the dead broker) is *stranded*: offline, nothing to copy from;
a plan leaves it where it is and says so before the approval, with what the operator can do.
Pure: a snapshot in, facts and sentences out (and, for a replacement, its "replace 4 with 7" line).
The sentences are the ones the plan report, the
approval and the final report print (from ``summary.json``'s ``dead_brokers`` and ``stranded``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Collection, Mapping, Sequence

from kafka_zk.codecs import TopicPartition
from kafka_zk.model import ClusterSnapshot, Partition

SHOWN = 10


def dead_among(snapshot: ClusterSnapshot, removed: Collection[int]) -> frozenset[int]:
    """The brokers of ``removed`` that are not registered (the caller has checked they hold replicas)."""
    return frozenset(b for b in removed if b not in snapshot.brokers)


def has_no_source(p: Partition, registered: Collection[int]) -> bool:
    """No registered broker is in the partition's ISR: nothing a new replica could copy from.
    A partition with no state znode yet (never initialised) is not judged."""
    return p.has_state and not any(b in registered for b in p.isr)


@dataclass(frozen=True)
class DeadBrokerFacts:
    """What a plan says about its dead brokers: replicas each held (in moved partitions) and the
    stranded partitions (left on a dead broker, offline)."""

    replicas: Mapping[int, int]
    stranded: tuple[Partition, ...]

    def summary(self) -> dict[str, Any]:
        """The ``summary.json`` entries: ``dead_brokers`` (id → replicas re-created) and ``stranded``."""
        return {"dead_brokers": {str(b): n for b, n in sorted(self.replicas.items())},
                "stranded": [{"topic": p.topic, "partition": p.partition, "replicas": list(p.replicas),
                              "isr": list(p.isr), "leader": p.leader} for p in self.stranded]}


def dead_broker_facts(snapshot: ClusterSnapshot, dead: Collection[int], moved: Collection[TopicPartition],
                      stranded: Sequence[TopicPartition]) -> DeadBrokerFacts:
    """Count the replicas each dead broker holds in ``moved`` partitions; the stranded partitions."""
    dead_set = frozenset(dead)
    counts = {b: 0 for b in dead_set}
    moved_set = set(moved)
    for p in snapshot.partitions():
        if p.tp in moved_set:
            for b in p.replicas:
                if b in dead_set:
                    counts[b] += 1
    return DeadBrokerFacts(counts, tuple(snapshot.partition(tp) for tp in stranded))


def replace_lines(summary: Mapping[str, Any], done: bool = False) -> list[str]:
    """For a replacement plan: "replace 4 with 7: 7 takes exactly 4's 312 replicas, ..." per pair
    (``done``: what a finished run did, "took")."""
    if summary.get("operation") != "replace":
        return []
    pairs = [tuple(int(x) for x in pair.split(":")) for pair in
             str((summary.get("params") or {}).get("replace") or "").split(",") if pair]
    brokers = summary.get("brokers") or {}
    out = []
    for old, new in pairs:
        n = (brokers.get(str(old)) or {}).get("before", {}).get("replicas", "?")
        out.append(f"replace {old} with {new}: broker {new} {'took' if done else 'takes'} exactly broker {old}'s {n} "
                   f"replica(s), in {old}'s position of each replica list (preferred leadership lands where it was); "
                   f"nothing else {'moved' if done else 'moves'}")
    return out


def statement_lines(summary: Mapping[str, Any], done: bool = False) -> list[str]:
    """The sentences a plan's summary gives about dead brokers (empty: none), e.g. "broker 5 is
    down: its 99 replicas are re-created from the surviving in-sync replicas" (``done``: what a
    finished run did, "were re-created")."""
    dead = {int(b): int(n) for b, n in (summary.get("dead_brokers") or {}).items()}
    stranded = list(summary.get("stranded") or [])

    def verb(n: int) -> str:
        return ("were" if n != 1 else "was") if done else ("are" if n != 1 else "is")

    lines = replace_lines(summary, done) + [f"broker {b} is down: its {n} replica{'s' if n != 1 else ''} "
             f"{verb(n)} re-created from the surviving in-sync replicas"
             " (copied from the live leaders; the dead broker is neither demoted nor throttled)"
             for b, n in sorted(dead.items())]
    if stranded:
        names = ", ".join(f"{s['topic']}-{s['partition']} (replicas {s['replicas']}, ISR {s['isr']})"
                          for s in stranded[:SHOWN])
        more = f" and {len(stranded) - SHOWN} more" if len(stranded) > SHOWN else ""
        on = sorted({b for s in stranded for b in s["isr"] if b in dead} or dead)
        lines.append(
            f"{len(stranded)} partition(s) are offline and stay as they are: their only in-sync replica was on "
            f"dead broker(s) {', '.join(map(str, on))}, so there is no source to copy from: {names}{more}. "
            f"Either wait for broker(s) {', '.join(map(str, on))} to come back (then run again), or — a separate, "
            "explicit choice that loses the records only the dead broker had — set "
            "unclean.leader.election.enable=true on those topics (kafka-configs --alter --entity-type topics), "
            "let a live replica lead, and run again")
    return lines
