"""An emulated copy of a real cluster: seeded from its snapshot, its log-dirs sizes and its disks.

:func:`spec_from_snapshot` turns a :class:`~kafka_zk.model.ClusterSnapshot` (the run's
``snapshot.jsonl``) into a :class:`~kafka_sim.spec.ClusterSpec`: the same broker ids and racks
(every broker an assignment names, registered or not), and each broker's disk when a capacity
is known (:class:`~kafka_zk.capacity.DiskCapacity`, the raw capacity: the threshold is the
planner's margin, a real disk fills at 100 %). :func:`seed_from_snapshot` then creates every
topic on a started :class:`~kafka_sim.cluster.EmulatedCluster` with the snapshot's assignment,
topic config overrides (throttled-replica lists included) and each partition's size from the
sizes (``kafka-log-dirs --describe`` output or a sizes file: the largest replica of a
partition), sets the brokers' config overrides (throttle rates) as ``kafka-configs`` would, and
stops the brokers the snapshot saw unregistered (a broker an assignment names with no
registration is down), then has the controller write each partition's leader and ISR as the
snapshot found them (:mod:`kafka_sim.as_found`: new replicas fetch from the leader, so leaders
moved by restarts without an election change which broker's throttle a move uses), and replays
a reassignment in flight: its partitions are created with their replicas before it (RS − ARS)
and ``/admin/reassign_partitions`` is written again, so the copy's controller runs it from its
start (how far it had got is not in a snapshot) and the rehearsal meets it as the run would.
A move in flight whose target names a broker that is not registered can never finish (its new
replica never joins the ISR, on the copy as on the cluster): :func:`unfinishable_replays` finds
those before anything is seeded, and the rehearsal reports them instead of waiting on them.

What is not copied, said in :class:`SeedReport`: how far behind an out-of-sync replica on a
live broker is (it holds the leader's log and rejoins the ISR at once); a reassignment's
progress (replayed from its start); a pending election or deletion (the runbook's guards
refuse to run over one); leaders that cannot be had on the copy (a leader not live or not in
its ISR: the controller's own choice stands, counted).

Reduced seed (``only``, what large rehearsals use, cli/rehearsal_run.py): only the partitions a
plan touches are created; every other partition stays out of the copy and its replicas' bytes
become each broker's constant *baseline* (:func:`untouched_baseline`): the copy's disks are
that much smaller (:func:`spec_from_snapshot` ``baseline``) and a rehearsal adds it back to the
bytes it samples, so disk peaks and a disk filling mid-move stay those of the full cluster. A
partition nothing moves has no flow, so the copying (rates, throttles, catch-up times) is the
same; what an untouched partition would cost the controller (its failover load, its share of
no work during a move) is left out.

Failure: a snapshot with no topic or a size for a partition the snapshot lacks raises nothing:
sizes are matched by partition and the rest count as empty (the report says how many); a
snapshot without brokers raises :class:`~kafka_zk.errors.InvalidInput` naming the file to check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet as Set, Mapping

from kafka_sim.spec import ClusterSpec
from kafka_zk import paths
from kafka_zk.admin.configs import alter_config
from kafka_zk.admin.reassignment import reassignment_request
from kafka_zk.authority import EmulatorSeeding
from kafka_zk.capacity import DiskCapacity
from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import InvalidInput
from kafka_zk.model import ClusterSnapshot
from kafka_zk.writer import ZkWriter


@dataclass(frozen=True)
class SeedReport:
    """What was copied into the emulator, and what was not."""

    brokers: int
    unregistered: tuple[int, ...]
    topics: int
    partitions: int
    bytes: int
    sized: int                  # partitions with a size in the sizes file
    not_copied: tuple[str, ...]
    untouched: int = 0          # partitions left out of a reduced seed (their bytes: the baseline)
    leaders_restored: int = 0   # partitions whose leader or ISR the controller wrote as the snapshot found them

    def line(self) -> str:
        return (f"{self.brokers} brokers ({len(self.unregistered)} unregistered), {self.topics} topics, "
                f"{self.partitions} partitions ({self.sized} sized), {self.bytes / 1024 ** 3:,.1f} GiB of leader data, "
                f"{self.leaders_restored:,} leader/ISR states as found")


def cluster_broker_ids(snapshot: ClusterSnapshot) -> tuple[int, ...]:
    """Registered brokers and every broker an assignment names."""
    ids = set(snapshot.brokers)
    for p in snapshot.partitions():
        ids.update(p.replicas)
    return tuple(sorted(ids))


def spec_from_snapshot(snapshot: ClusterSnapshot, capacity: DiskCapacity | None = None,
                       baseline: Mapping[int, int] | None = None, **knobs) -> ClusterSpec:
    """The spec of an emulated copy of ``snapshot``; ``baseline``: bytes per broker of partitions a
    reduced seed leaves out (taken off each disk); ``knobs`` are other :class:`ClusterSpec` fields
    (speed, network_rate, seed...)."""
    ids = cluster_broker_ids(snapshot)
    if not ids:
        raise InvalidInput("the snapshot has no broker and no partition: check it is the cluster's snapshot.jsonl")
    racks = {b: (snapshot.brokers[b].rack if b in snapshot.brokers else None) for b in ids}
    disks = None
    if capacity is not None:
        base = baseline or {}
        disks = {b: max(1, int(c) - int(base.get(b, 0))) for b in ids
                 if (c := capacity.capacity(b)) is not None} or None
    return ClusterSpec(brokers=racks, disk_capacity=disks, **knobs)


def untouched_baseline(snapshot: ClusterSnapshot, sizes: Mapping[TopicPartition, int] | None,
                       touched: Set[TopicPartition]) -> dict[int, int]:
    """Bytes each broker holds of the partitions not in ``touched`` (every replica: the partition's
    size, as the emulator counts a seeded in-sync replica)."""
    by_topic = partition_sizes(snapshot, sizes)
    out: dict[int, int] = {b: 0 for b in cluster_broker_ids(snapshot)}
    for name, t in snapshot.topics.items():
        if t.marked_for_deletion:
            continue
        for p, part in t.partitions.items():
            if TopicPartition(name, p) not in touched:
                for b in part.replicas:
                    out[b] = out.get(b, 0) + by_topic[name][p]
    return out


def partition_sizes(snapshot: ClusterSnapshot, sizes: Mapping[TopicPartition, int] | None
                    ) -> dict[str, dict[int, int]]:
    """Size of every partition of the snapshot, by topic (0 where the sizes do not list it)."""
    sizes = sizes or {}
    return {name: {p: int(sizes.get(TopicPartition(name, p), 0)) for p in t.partitions}
            for name, t in snapshot.topics.items()}


def seed_from_snapshot(cluster, snapshot: ClusterSnapshot, sizes: Mapping[TopicPartition, int] | None,
                       who: str, only: Set[TopicPartition] | None = None) -> SeedReport:
    """Create the snapshot's topics (with sizes and configs) on the started ``cluster`` — with
    ``only``, just those partitions (a reduced seed, see the module docstring); set the
    brokers' config overrides through the one writer built here for seeding an emulator (audited
    as ``who``, authorised by :class:`kafka_zk.authority.EmulatorSeeding`: the emulator's own
    ZooKeeper only); stop the brokers the snapshot saw unregistered."""

    by_topic = partition_sizes(snapshot, sizes)
    replay = snapshot.reassignment.targets() if snapshot.reassignment is not None else {}
    todo = {}
    for name, t in snapshot.topics.items():
        keep = [p for p in sorted(t.partitions) if only is None or TopicPartition(name, p) in only]
        if not t.marked_for_deletion and (keep or only is None):
            todo[name] = ({p: _created_replicas(t.partitions[p], replay) for p in keep},
                          {p: by_topic[name][p] for p in keep}, dict(t.config))
    untouched = 0 if only is None else sum(
        1 for name, t in snapshot.topics.items() if not t.marked_for_deletion
        for p in t.partitions if TopicPartition(name, p) not in only)
    if todo:
        cluster.create_topics(todo, contiguous=only is None)
    overrides = {e: c for e, c in snapshot.broker_configs.items() if c}
    writer = ZkWriter(cluster.tool_client, actor=f"{who}: seeding", authority=EmulatorSeeding(who))
    for entity, config in sorted(overrides.items()):
        alter_config(writer, "brokers", entity, add=dict(config))
    ids = cluster_broker_ids(snapshot)
    unregistered = tuple(b for b in ids if b not in snapshot.brokers)
    for b in unregistered:
        cluster.kill_broker(b)
    created = {(name, p) for name, (a, _, _) in todo.items() for p in a}
    states = {p.tp: (p.leader, p.isr) for p in snapshot.partitions()
              if p.has_state and (p.topic, p.partition) in created and p.leader >= 0}
    restored = cluster.restore_states(states) if states else None
    not_copied = []
    live = set(snapshot.brokers)
    if any(set(p.isr) != set(p.replicas) & live for p in snapshot.partitions() if p.has_state):
        not_copied.append("how far behind out-of-sync replicas on live brokers are: they rejoin the ISR at once")
    if restored is not None and restored.skipped:
        not_copied.append(f"the snapshot's leader of {len(restored.skipped):,} partition(s) (not live or not in its "
                          "ISR on the copy): the controller's own choice leads them")
    if replay:
        _replay_reassignment(writer, {tp: r for tp, r in replay.items() if (tp.topic, tp.partition) in created})
        not_copied.append(f"the progress of the reassignment in flight ({len(replay):,} partition(s)): replayed "
                          "from its start")
    elif snapshot.reassigning_partitions():
        not_copied.append("adding/removing replicas of a reassignment whose /admin/reassign_partitions is gone")
    if snapshot.preferred_election is not None:
        not_copied.append("the preferred election pending in the snapshot")
    if snapshot.delete_markers or any(t.marked_for_deletion for t in snapshot.topics.values()):
        not_copied.append("topics marked for deletion")
    if untouched:
        not_copied.append(f"{untouched:,} partitions the plan does not touch: not created, their bytes are each "
                          "broker's disk baseline")
    listed = sizes or {}
    return SeedReport(len(ids), unregistered, len(todo), sum(len(a) for a, _, _ in todo.values()),
                      sum(sum(s.values()) for _, s, _ in todo.values()),
                      sum(1 for name, (a, _, _) in todo.items() for p in a if TopicPartition(name, p) in listed),
                      tuple(not_copied), untouched, 0 if restored is None else restored.written)


@dataclass(frozen=True)
class UnfinishableMove:
    """A partition of the reassignment in flight that can never finish: its target names brokers
    that are not registered (``missing``); ``dead``: those of them that hold its data (down brokers
    the plan re-creates the replicas of)."""

    tp: TopicPartition
    target: tuple[int, ...]
    missing: tuple[int, ...]
    dead: tuple[int, ...] = ()

    def sentence(self) -> str:
        """The problem as the rehearsal report and the approval print it."""
        absent = [b for b in self.missing if b not in self.dead]
        why = []
        if absent:
            why.append(f"broker{'s' if len(absent) > 1 else ''} {', '.join(map(str, absent))} "
                       f"{'are' if len(absent) > 1 else 'is'} not registered (no such broker is up)")
        if self.dead:
            why.append(f"broker{'s' if len(self.dead) > 1 else ''} {', '.join(map(str, self.dead))} "
                       f"{'are' if len(self.dead) > 1 else 'is'} down (its replica cannot rejoin the ISR; "
                       "the plan re-creates it elsewhere)")
        return (f"a reassignment already in progress can never finish: {self.tp.topic}-{self.tp.partition} → "
                f"{list(self.target)} targets {'; '.join(why)}; the guards refuse every run until it is fixed: "
                "end it with the stuck_reassignment runbook (or start the missing broker), then plan again; "
                "not rehearsed")


def unfinishable_replays(snapshot: ClusterSnapshot, recreated: Set[int] = frozenset()) -> tuple[UnfinishableMove, ...]:
    """The moves of the snapshot's reassignment in flight whose target names a broker that is not
    registered: the copy's controller (as the cluster's) waits for that replica to join the ISR
    forever. ``recreated``: the dead brokers the plan re-creates the replicas of (a target broker
    among them that already held the partition is named as down, not as missing)."""
    if snapshot.reassignment is None:
        return ()
    out = []
    for tp, target in sorted(snapshot.reassignment.targets().items()):
        missing = tuple(b for b in target if b not in snapshot.brokers)
        if missing:
            part = snapshot.topics.get(tp.topic)
            part = part.partitions.get(tp.partition) if part is not None else None
            held = set(part.origin) if part is not None else set()
            out.append(UnfinishableMove(tp, tuple(target), missing,
                                        tuple(b for b in missing if b in recreated and b in held)))
    return tuple(out)


def _created_replicas(part, replay: Mapping[TopicPartition, tuple[int, ...]]) -> tuple[int, ...]:
    """A partition's replicas on the copy: those before the reassignment when one is replayed."""
    return part.origin if part.tp in replay and part.origin else part.replicas


def _replay_reassignment(writer: ZkWriter, targets: Mapping[TopicPartition, tuple[int, ...]]) -> None:
    """``/admin/reassign_partitions`` with the snapshot's entries (those on the copy), as found."""
    if targets:
        writer.create(paths.REASSIGN_PARTITIONS, reassignment_request(targets).encode(), makepath=True)
