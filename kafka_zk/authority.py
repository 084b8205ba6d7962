"""Who may write: the authorisation :class:`kafka_zk.writer.ZkWriter` checks before every write.

A writer cannot be built without a :class:`WriteAuthority` (a required argument), and it asks
:meth:`WriteAuthority.authorise` before each create, set and delete it makes (a dry run writes
nothing and asks nothing). The authority says why this write may happen, or raises
:class:`~kafka_zk.errors.WriteNotApproved` naming what is missing. Three kinds:

* :class:`ApprovalOnRecord` — a run's writes: the run's approval record (a JSON file such as the
  run folder's ``approval.json``) must hold an approving decision for exactly the hash of what the
  step is about to act on (its plan, or the change document it applies). The hash is asked from
  the step once, at the first write; the record is re-read before every write, so a record removed
  or replaced meanwhile stops the next write. This module knows nothing of Airflow: the caller says
  which file holds the approval and how to hash what it acts on.
* :class:`OwnThrottlesOnly` — a run's teardown, which must always clean up even when nothing was
  approved: only config writes that change replication-throttle keys, on the entities the run's
  throttle record lists (and their change notifications), are let through.
* :class:`PersonAtKeyboard` — the command line: the person who typed the command is the approval.
  Said explicitly where the CLI builds its writer.
* :class:`EmulatorSeeding` — writes that seed an emulated cluster (``kafka-runbook sim
  --from-snapshot`` copying a snapshot's broker configs into a private chroot): no real cluster is
  touched. Said explicitly where the emulator's seeding builds its writer. (The emulator's brokers
  and controller never write through this gate: their writes are Kafka's own, made through
  :mod:`kafka_sim.zk_io`.)

Failure: :class:`~kafka_zk.errors.WriteNotApproved`, raised before the write, naming the record
and what it holds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

from kafka_zk import codecs, paths
from kafka_zk.errors import InvalidPayload, KafkaZkError, WriteNotApproved
from kafka_zk.throttle_lists import FOLLOWER_KEY, LEADER_KEY

THROTTLE_KEYS = frozenset({LEADER_KEY, FOLLOWER_KEY, "leader.replication.throttled.rate",
                           "follower.replication.throttled.rate",
                           "replica.alter.log.dirs.io.max.bytes.per.second"})
APPROVING = ("approved", "pre_approved")


class WriteAuthority(Protocol):
    """What a writer asks before each write."""

    def authorise(self, op: str, path: str, data: bytes | None, before: bytes | None) -> None:
        """Return when ``op`` (create/set/delete) of ``path`` may happen; else raise WriteNotApproved."""

    def describe(self) -> str:
        """One line for logs and audit: on what authority this writer writes."""


@dataclass(frozen=True)
class PersonAtKeyboard:
    """The command line: the person who ran the command approves its writes by running it."""

    who: str = "the person running kafka-runbook"

    def authorise(self, op: str, path: str, data: bytes | None, before: bytes | None) -> None:
        return None

    def describe(self) -> str:
        return f"approved by {self.who} at the keyboard"


@dataclass(frozen=True)
class EmulatorSeeding:
    """Seeding an emulated cluster (kafka_sim) in a private chroot: no real cluster is written."""

    what: str = "kafka-runbook sim"

    def authorise(self, op: str, path: str, data: bytes | None, before: bytes | None) -> None:
        return None

    def describe(self) -> str:
        return f"seeding an emulated cluster ({self.what})"


@dataclass
class ApprovalOnRecord:
    """A run's writes: ``record`` must approve exactly ``acting_on()``'s hash (see module docstring).

    ``hash_field`` is the record's key holding the approved hash (``plan_hash`` for a plan,
    ``document_sha256`` for a change document); ``what`` names it in messages.
    """

    record: Path
    acting_on: Callable[[], str]
    hash_field: str = "plan_hash"
    what: str = "plan"
    _hash: str | None = field(default=None, init=False, repr=False)

    def expected(self) -> str:
        if self._hash is None:
            try:
                self._hash = self.acting_on()
            except KafkaZkError as exc:
                raise WriteNotApproved(f"refusing to write: cannot tell which {self.what} this step acts on "
                                       f"({exc}); nothing written") from None
        return self._hash

    def authorise(self, op: str, path: str, data: bytes | None, before: bytes | None) -> None:
        expected = self.expected()
        try:
            doc = json.loads(Path(self.record).read_text(encoding="utf-8"))
        except FileNotFoundError:
            doc = None
        except (OSError, ValueError) as exc:
            raise WriteNotApproved(f"refusing to {op} {path}: the approval record {self.record} cannot be read "
                                   f"({exc}); nothing written") from None
        if not isinstance(doc, dict):
            raise WriteNotApproved(
                f"refusing to {op} {path}: missing approval — {self.record} does not exist, so nobody approved "
                f"this run's {self.what} ({expected[:12]}…). A task marked success by hand is no approval: "
                "clear the approve task and have another person approve; nothing written")
        decision = doc.get("decision")
        if decision not in APPROVING:
            by = doc.get("by") or "policy"
            raise WriteNotApproved(f"refusing to {op} {path}: {self.record} records decision {decision!r} by {by}, "
                                   f"not an approval of this run's {self.what}; nothing written")
        if doc.get(self.hash_field) != expected:
            held = str(doc.get(self.hash_field) or "none")
            raise WriteNotApproved(f"refusing to {op} {path}: {self.record} approves {self.what} {held[:12]}…, but "
                                   f"this step acts on {expected[:12]}…: re-plan and approve again; nothing written")

    def describe(self) -> str:
        return f"{self.what} approval in {self.record}"


@dataclass(frozen=True)
class OwnThrottlesOnly:
    """A teardown: only throttle keys of the ``entities`` (``"topics/<t>"``, ``"brokers/<id>"``) the
    run's throttle record lists may change, plus the change notifications of those entities."""

    entities: frozenset[str]
    record: str = "the run's throttle record"

    def _refuse(self, op: str, path: str, why: str) -> WriteNotApproved:
        return WriteNotApproved(f"refusing to {op} {path}: without an approval a teardown may only restore the "
                                f"throttles listed in {self.record}, and {why}; nothing written")

    def authorise(self, op: str, path: str, data: bytes | None, before: bytes | None) -> None:
        if op == "create" and path.startswith(paths.CONFIG_CHANGE_PREFIX):
            try:
                entity = codecs.decode_config_change(data).entity_path
            except InvalidPayload:
                entity = "?"
            if entity not in self.entities:
                raise self._refuse(op, path, f"this notification names {entity}")
            return
        prefix = paths.CONFIG + "/"
        entity = path[len(prefix):] if path.startswith(prefix) else None
        if op == "delete" or entity not in self.entities:
            raise self._refuse(op, path, "this is not such a config write")
        old = codecs.decode_entity_config(before).config if before else {}
        new = codecs.decode_entity_config(data).config if data else {}
        changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k) and k not in THROTTLE_KEYS)
        if changed:
            raise self._refuse(op, path, f"it would change {', '.join(changed)}")

    def describe(self) -> str:
        return f"teardown of the throttles in {self.record}"
