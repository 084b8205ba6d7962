"""Why a wave's partitions stopped moving, read from one ZooKeeper snapshot: named dead ends.

:func:`stall_causes` looks at each unfinished partition of a wave and says what the cluster
shows, most certain first:

* **topic deleted** while its partition moves — the move can never finish (its entry stays in
  ``/admin/reassign_partitions`` until the controller changes): a *dead end*;
* **controller not acting** — ``/controller`` absent (no broker is controller), or the node
  lists the wave's partitions and the controller started none of them (on 2.4 a node created
  after someone else deleted the previous one is ignored until the controller changes,
  docs/zookeeper.md §2.7.1): fixed by forcing a controller election (delete ``/controller``);
* **destination broker not registered** (no ``/brokers/ids/<id>``) — the new replica cannot copy
  until that broker is back: restart it, or re-plan without it;
* **follower up but not in the ISR** — its broker is registered and the copy does not progress:
  a fetch failure; check that broker's server.log. When the topic's ``max.message.bytes`` is below
  the brokers' ``message.max.bytes`` (default 1000012) it is named: a batch written before the
  value was lowered makes every fetch fail with RecordTooLargeException (raise it back, at least
  to the largest batch).

:func:`blocking_causes` keeps the causes that cannot resolve while the wave waits (controller
not acting, destination not registered): the trigger ends the wait on them, naming the fix,
once they have lasted its ``dead_end_s``.

Pure: a snapshot (with the topics' and brokers' config overrides) and the wave in, a
:class:`StallCause` per partition out; it never raises on a partial snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_zk.model import ClusterSnapshot
from procedures.waves.book import WaveMove, WaveSpec, partition_done

BROKER_MESSAGE_MAX_BYTES = 1000012   # Kafka 2.4's default message.max.bytes
CONTROLLER = "controller"            # StallCause.kind of a controller not acting (absent, or not started)


@dataclass(frozen=True)
class StallCause:
    """One stopped partition and the likely cause; ``dead_end``: it can never finish as planned;
    ``kind``: :data:`CONTROLLER` for a controller not acting, else empty."""

    partition: str
    cause: str
    dead_end: bool = False
    kind: str = ""

    def __str__(self) -> str:
        return f"{self.partition}: {self.cause}"


def _broker_message_max(snap: ClusterSnapshot, broker: int) -> int:
    for entity in (str(broker), "<default>"):
        value = snap.broker_configs.get(entity, {}).get("message.max.bytes")
        if value is not None and str(value).isdigit():
            return int(value)
    return BROKER_MESSAGE_MAX_BYTES


def _untouched(snap: ClusterSnapshot, m: WaveMove) -> bool:
    """The controller has not started this move: no adding/removing replicas, the replica set
    still the plan's (1.x – 2.3 controllers write the union), the order not yet the target's."""
    p = snap.partition(m.tp)
    return (not p.is_reassigning and set(p.replicas) == set(m.current)
            and tuple(p.replicas) != tuple(m.target))


def controller_cause(snap: ClusterSnapshot, wave: WaveSpec) -> StallCause | None:
    """Why no controller is acting on the wave's entries in ``/admin/reassign_partitions``, or None:
    what this one snapshot shows, without advice (see the module docstring)."""
    listed = set(snap.reassignment.targets()) if snap.reassignment is not None else set()
    ours = [m for m in wave.moves if m.tp in listed and snap.has_partition(m.tp)
            and not partition_done(snap.partition(m.tp), m.target)]
    if not ours:
        return None
    names = ", ".join(str(m.tp) for m in ours[:5]) + (f" (+{len(ours) - 5} more)" if len(ours) > 5 else "")
    if snap.controller_id is None:
        return StallCause(names, "no controller elected (/controller is absent): nothing acts on "
                                 "/admin/reassign_partitions; check that the brokers are up and reach ZooKeeper "
                                 "(their server.log and controller.log)", True, CONTROLLER)
    if all(_untouched(snap, m) for m in ours):
        return StallCause(names, f"the controller (broker {snap.controller_id}) has not started "
                                 "/admin/reassign_partitions: none of its partitions shows adding/removing "
                                 "replicas (on 2.4 a node recreated after someone else deleted the previous one "
                                 "is ignored until the controller changes)", True, CONTROLLER)
    return None


def blocking_causes(snap: ClusterSnapshot, wave: WaveSpec) -> list[StallCause]:
    """The causes among :func:`stall_causes` that waiting cannot resolve: the controller not
    acting, a destination broker not registered."""
    return [c for c in stall_causes(snap, wave) if c.dead_end or "not registered" in c.cause]


def stall_causes(snap: ClusterSnapshot, wave: WaveSpec) -> list[StallCause]:
    """The likely cause for each unfinished partition of ``wave`` (see module docstring); a
    controller that is not acting comes first."""
    controller = controller_cause(snap, wave)
    out = [controller] if controller is not None else []
    for m in wave.moves:
        name = str(m.tp)
        if m.tp.topic not in snap.topics:
            out.append(StallCause(name, f"topic {m.tp.topic} was deleted while its partition moved: the move "
                                        "cannot finish; its entry stays in /admin/reassign_partitions until the "
                                        "controller changes (move the controller, or wait), then re-plan", True))
            continue
        if not snap.has_partition(m.tp):
            out.append(StallCause(name, "partition no longer exists: re-plan", True))
            continue
        p = snap.partition(m.tp)
        if partition_done(p, m.target):
            continue
        missing = [b for b in m.target if b not in snap.brokers]
        if missing:
            out.append(StallCause(name, f"destination broker(s) {missing} not registered (no /brokers/ids entry): "
                                        "the new replica cannot copy until it is back; restart it, or re-plan "
                                        "without it"))
            continue
        lagging = [b for b in m.target if b not in p.isr]
        if not lagging:
            out.append(StallCause(name, "every target replica is in the ISR: waiting for the controller to "
                                        "complete it; check that a controller is elected (/controller)"))
            continue
        topic_max = snap.topics[m.tp.topic].config.get("max.message.bytes")
        low = ""
        if topic_max is not None and str(topic_max).isdigit():
            broker_max = min(_broker_message_max(snap, b) for b in lagging)
            if int(topic_max) < broker_max:
                low = (f"; topic {m.tp.topic} has max.message.bytes={topic_max}, below the brokers' "
                       f"message.max.bytes={broker_max}: if it was lowered after larger batches were written, "
                       "followers fail every fetch with RecordTooLargeException — raise it back")
        out.append(StallCause(name, f"follower(s) on broker(s) {lagging} up but not in the ISR and not "
                                    f"catching up: a fetch failure, check their server.log{low}"))
    return out
