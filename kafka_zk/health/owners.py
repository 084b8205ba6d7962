"""Which live runbook run owns the throttles on the cluster (so health does not call them leaks).

A runbook run that sets throttles saves its :class:`kafka_zk.admin.throttles.ThrottleRecord`
(``throttles.json``: the brokers and topics it throttled and their pre-run values) in its run
folder *before* its first write, and its teardown writes ``throttles_removed.json`` once it has
restored them. So a run folder under the run root holding a record and no removal marker is a
run whose throttles are still its own: live (or killed before its teardown, which the finding
says how to tell and fix). :func:`find_throttle_owners` lists those runs; :func:`owner_of`
names the run owning one broker or topic.

Failure: none raised. A record that cannot be read is skipped with its path in
:attr:`ThrottleOwners.unreadable` (the health report lists it), never guessed at.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from kafka_zk.admin.throttles import ThrottleRecord
from kafka_zk.errors import InvalidPayload
from kafka_zk.health.model import throttle_keys_of_broker, throttle_keys_of_topic
from kafka_zk.model import ClusterSnapshot

RECORD = "throttles.json"
REMOVED_MARKER = "throttles_removed.json"


@dataclass(frozen=True)
class RunThrottles:
    """One run folder's unremoved throttle record: the brokers and topics it throttles."""

    dag_id: str
    run_id: str
    folder: str
    brokers: frozenset[str]
    topics: frozenset[str]
    recorded_at: float

    @property
    def name(self) -> str:
        return f"{self.dag_id} run {self.run_id}"


@dataclass(frozen=True)
class ThrottleOwners:
    runs: tuple[RunThrottles, ...] = ()
    unreadable: tuple[str, ...] = field(default=())

    @property
    def topics(self) -> frozenset[str]:
        """Every topic whose throttles a run of ours owns."""
        return frozenset(str(t) for r in self.runs for t in r.topics)

    def owner_of(self, kind: str, entity: str) -> RunThrottles | None:
        """The run owning broker (``kind="broker"``) or topic ``entity``, most recent first."""
        for run in sorted(self.runs, key=lambda r: -r.recorded_at):
            if entity in (run.brokers if kind == "broker" else run.topics):
                return run
        return None


def find_throttle_owners(run_root: str | os.PathLike | None) -> ThrottleOwners:
    """Every ``<run_root>/<dag>/<run>/throttles.json`` without ``throttles_removed.json`` beside it."""

    if not run_root or not Path(run_root).is_dir():
        return ThrottleOwners()
    runs, bad = [], []
    for record_path in sorted(Path(run_root).glob(f"*/*/{RECORD}")):
        folder = record_path.parent
        if (folder / REMOVED_MARKER).exists():
            continue
        try:
            record = ThrottleRecord.load(record_path)
            recorded_at = record_path.stat().st_mtime
        except (OSError, ValueError, InvalidPayload):
            bad.append(str(record_path))
            continue
        runs.append(RunThrottles(folder.parent.name, folder.name, str(folder),
                                 frozenset(b.broker for b in record.brokers),
                                 frozenset(t.topic for t in record.topics), recorded_at))
    return ThrottleOwners(tuple(runs), tuple(bad))


@dataclass(frozen=True)
class ForeignThrottle:
    """A throttle no runbook run of ours owns: ``entity`` is ``broker <id>`` or ``topic <name>``."""

    entity: str
    keys: dict[str, str]


def foreign_throttles(snapshot: ClusterSnapshot, owners: ThrottleOwners) -> list[ForeignThrottle]:
    """Broker rates and topic throttled-replica lists that no live runbook run recorded (left by Kafka's
    own ``kafka-reassign-partitions --throttle``, which removes them only with ``--verify`` once the
    move ends, or by hand)."""
    owned_brokers = {str(b) for r in owners.runs for b in r.brokers}
    out = []
    for entity in sorted(snapshot.broker_configs):
        keys = throttle_keys_of_broker(snapshot.broker_configs[entity])
        if keys and entity not in owned_brokers:
            out.append(ForeignThrottle(f"broker {entity}", dict(sorted(keys.items()))))
    for name in sorted(snapshot.topics):
        keys = throttle_keys_of_topic(snapshot.topics[name].config)
        if keys and name not in owners.topics:
            out.append(ForeignThrottle(f"topic {name}", dict(sorted(keys.items()))))
    return out
