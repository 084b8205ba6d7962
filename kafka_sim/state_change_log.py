"""Each emulated broker's ``state-change.log``, in Kafka 2.4.1's own line formats.

Kafka's controller and brokers log their state-change decisions to the ``state.change.logger``
(log4j layout ``[%d] %p %m (%c)%n``, one file per broker). The emulator writes the lines for
what it emulates, with the texts of Kafka 2.4.1's source (``kafka.controller``:
PartitionStateMachine, ReplicaStateMachine, ControllerChannelManager, KafkaController;
``kafka.server``: ReplicaManager, MetadataCache), and the emulator's simulated clock as the time:
simulated second 0 is ``start`` (UTC epoch seconds; the wall clock when the engine started by
default). Lines go to ``<folder>/broker-<id>/state-change.log``; controller lines go to the file
of the broker that is controller, broker lines only to live brokers' files.

What is emulated (and so logged): partition creation, leader elections (offline, preferred,
reassignment), ISR removals by the controller (OfflineReplica), reassignment phases (new
replicas, LeaderAndIsr with the new assignment, removed replicas stopped and deleted), topic
deletion, and each LeaderAndIsr/StopReplica a live broker receives. Not logged: the leaders' own
ISR shrink/expand (Kafka writes those to server.log, not here) and UpdateMetadata per broker.
Object texts follow Kafka's ``toString``s (``LeaderAndIsr(...)``, the generated
``LeaderAndIsrPartitionState(...)``, ``(Leader:1,ISR:1,2,LeaderEpoch:5,ControllerEpoch:3)``).

Failure: a folder that cannot be created or written raises ``OSError`` when the engine starts
(before any broker registers); a disabled logger (no folder) does nothing.
"""

from __future__ import annotations

import datetime as _dt
import os
import threading
from typing import IO, Iterable, Sequence

from kafka_zk.codecs import PartitionState, TopicPartition

LOGGER = "state.change.logger"


def _list(xs: Iterable[int]) -> str:
    return "List(" + ", ".join(str(x) for x in xs) + ")"


def _arr(xs: Iterable[int]) -> str:
    return "[" + ", ".join(str(x) for x in xs) + "]"


def leader_and_isr(st: PartitionState, zk_version: int) -> str:
    """Kafka's ``LeaderAndIsr.toString``."""
    return (f"LeaderAndIsr(leader={st.leader}, leaderEpoch={st.leader_epoch}, isr={_list(st.isr)}, "
            f"zkVersion={zk_version})")


def partition_state_text(tp: TopicPartition, st: PartitionState, zk_version: int, replicas: Sequence[int],
                         adding: Sequence[int] = (), removing: Sequence[int] = (), is_new: bool = False) -> str:
    """The generated ``LeaderAndIsrPartitionState.toString`` (request v4 fields)."""
    return (f"LeaderAndIsrPartitionState(topicName='{tp.topic}', partitionIndex={tp.partition}, "
            f"controllerEpoch={st.controller_epoch}, leader={st.leader}, leaderEpoch={st.leader_epoch}, "
            f"isr={_arr(st.isr)}, zkVersion={zk_version}, replicas={_arr(replicas)}, "
            f"addingReplicas={_arr(adding)}, removingReplicas={_arr(removing)}, "
            f"isNew={'true' if is_new else 'false'})")


class StateChangeLog:
    """The per-broker files. ``folder=None``: disabled (every call returns at once)."""

    def __init__(self, folder: str | None, start: float | None = None, buffering: int = 1) -> None:
        self.folder = folder
        self.buffering = buffering          # 1: line by line (readers see every entry at once)
        self.start = _dt.datetime.fromtimestamp(
            _dt.datetime.now(_dt.timezone.utc).timestamp() if start is None else start, _dt.timezone.utc)
        self._files: dict[int, IO[str]] = {}
        self._corr: dict[int, int] = {}
        self._replica: dict[tuple[TopicPartition, int], str] = {}   # last logged replica state
        self._lock = threading.Lock()
        if folder is not None:
            os.makedirs(folder, exist_ok=True)

    @property
    def enabled(self) -> bool:
        return self.folder is not None

    def path(self, broker: int) -> str:
        assert self.folder is not None
        return os.path.join(self.folder, f"broker-{broker}", "state-change.log")

    def time_text(self, sim_seconds: float) -> str:
        when = self.start + _dt.timedelta(seconds=sim_seconds)
        return when.strftime("%Y-%m-%d %H:%M:%S,") + f"{when.microsecond // 1000:03d}"

    def write(self, broker: int, now: float, level: str, ident: str, message: str) -> None:
        """One entry: ``[time] LEVEL [ident] message (state.change.logger)``."""
        if self.folder is None:
            return
        with self._lock:
            fh = self._files.get(broker)
            if fh is None:
                os.makedirs(os.path.dirname(self.path(broker)), exist_ok=True)
                fh = self._files[broker] = open(self.path(broker), "a", encoding="utf-8",
                                                    buffering=self.buffering)
            fh.write(f"[{self.time_text(now)}] {level} [{ident}] {message} ({LOGGER})\n")

    def flush(self) -> None:
        with self._lock:
            for fh in self._files.values():
                fh.flush()

    def close(self) -> None:
        with self._lock:
            for fh in self._files.values():
                fh.close()
            self._files.clear()

    def _next_corr(self, controller: int) -> int:
        self._corr[controller] = self._corr.get(controller, -1) + 1
        return self._corr[controller]

    # ------------------------------------------------------------------ controller lines
    def partition_changed(self, ctrl: int, epoch: int, now: float, tp: TopicPartition,
                          before: PartitionState | None, after: PartitionState, zk_version: int,
                          live: set[int]) -> None:
        """PartitionStateMachine: a leader was elected (or none could be)."""
        if not self.enabled:
            return
        ident = f"Controller id={ctrl} epoch={epoch}"
        if after.leader < 0:
            self.write(ctrl, now, "TRACE", ident,
                       f"Changed partition {tp} state from OnlinePartition to OfflinePartition")
            return
        if before is None:
            prior = "NewPartition"
        elif before.leader == after.leader:
            return                                    # ISR or epoch only: no partition transition
        else:
            prior = "OnlinePartition" if before.leader in live else "OfflinePartition"
        self.write(ctrl, now, "TRACE", ident, f"Changed partition {tp} from {prior} to OnlinePartition "
                   f"with state {leader_and_isr(after, zk_version)}")

    def leader_and_isr_sent(self, ctrl: int, epoch: int, now: float, tp: TopicPartition,
                            st: PartitionState, zk_version: int, replicas: Sequence[int],
                            adding: Sequence[int], removing: Sequence[int], live: set[int],
                            is_new: bool = False) -> None:
        """ControllerChannelManager's sends, and each live replica's ReplicaManager lines."""
        if not self.enabled:
            return
        ident = f"Controller id={ctrl} epoch={epoch}"
        state = partition_state_text(tp, st, zk_version, replicas, adding, removing, is_new)
        for b in replicas:
            if b not in live:
                continue
            kind = "become-leader" if b == st.leader else "become-follower"
            self.write(ctrl, now, "TRACE", ident,
                       f"Sending {kind} LeaderAndIsr request {state} to broker {b} for partition {tp}")
        for b in replicas:
            if b not in live:
                continue
            corr = self._next_corr(ctrl)
            bident = f"Broker id={b}"
            self.write(b, now, "TRACE", bident, f"Received LeaderAndIsr request {state} correlation id "
                       f"{corr} from controller {ctrl} epoch {epoch}")
            if b == st.leader:
                self.write(b, now, "TRACE", bident, f"Handling LeaderAndIsr request correlationId {corr} from "
                           f"controller {ctrl} epoch {epoch} starting the become-leader transition for "
                           f"partition {tp}")
            else:
                self.write(b, now, "TRACE", bident, f"Handling LeaderAndIsr request correlationId {corr} from "
                           f"controller {ctrl} epoch {epoch} starting the become-follower transition for "
                           f"partition {tp} with leader {st.leader}")

    def replica_changed(self, ctrl: int, epoch: int, now: float, tp: TopicPartition, replica: int,
                        before: str, after: str) -> None:
        """ReplicaStateMachine.logSuccessfulTransition; ``before`` is what the caller expects, the
        state last logged for that replica wins (an offline replica goes Offline → Offline)."""
        if self.enabled:
            before = self._replica.get((tp, replica), before)
            if after == "NonExistentReplica":
                self._replica.pop((tp, replica), None)
            else:
                self._replica[(tp, replica)] = after
            self.write(ctrl, now, "TRACE", f"Controller id={ctrl} epoch={epoch}",
                       f"Changed state of replica {replica} for partition {tp} from {before} to {after}")

    def reassignment_sent(self, ctrl: int, epoch: int, now: float, tp: TopicPartition, st: PartitionState,
                          replicas: Sequence[int], adding: Sequence[int], removing: Sequence[int]) -> None:
        """KafkaController.updateLeaderEpochAndSendRequest (reassignment phase A)."""
        if self.enabled:
            self.write(ctrl, now, "TRACE", f"Controller id={ctrl} epoch={epoch}",
                       f"Sent LeaderAndIsr request (Leader:{st.leader},ISR:{','.join(map(str, st.isr))},"
                       f"LeaderEpoch:{st.leader_epoch},ControllerEpoch:{epoch}) with new replica assignment "
                       f"ReplicaAssignment({_list(replicas)},{_list(adding)},{_list(removing)}) to leader "
                       f"{st.leader} for partition being reassigned {tp}")

    def replicas_deleted(self, ctrl: int, epoch: int, now: float, tp: TopicPartition,
                         replicas: Iterable[int], live: set[int]) -> None:
        """Replicas leaving a partition (reassignment B3, topic deletion): StopReplica with
        delete=true, then the deletion transitions."""
        if not self.enabled:
            return
        for r in replicas:
            self.replica_changed(ctrl, epoch, now, tp, r, "OfflineReplica", "ReplicaDeletionStarted")
            if r in live:
                self.write(r, now, "TRACE", f"Broker id={r}",
                           f"Handling stop replica (delete=true) for partition {tp}")
                self.write(r, now, "TRACE", f"Broker id={r}",
                           f"Finished handling stop replica (delete=true) for partition {tp}")
                self.replica_changed(ctrl, epoch, now, tp, r, "ReplicaDeletionStarted",
                                     "ReplicaDeletionSuccessful")
                self.replica_changed(ctrl, epoch, now, tp, r, "ReplicaDeletionSuccessful", "NonExistentReplica")
            else:
                self.replica_changed(ctrl, epoch, now, tp, r, "ReplicaDeletionStarted",
                                     "ReplicaDeletionIneligible")

    def partition_deleted(self, ctrl: int, epoch: int, now: float, tp: TopicPartition, live: set[int]) -> None:
        """TopicDeletionManager.completeDeleteTopic: the partition goes away, brokers forget it."""
        if not self.enabled:
            return
        ident = f"Controller id={ctrl} epoch={epoch}"
        self.write(ctrl, now, "TRACE", ident, f"Changed partition {tp} state from OnlinePartition to OfflinePartition")
        self.write(ctrl, now, "TRACE", ident,
                   f"Changed partition {tp} state from OfflinePartition to NonExistentPartition")
        for b in sorted(live):
            self.write(b, now, "TRACE", f"Broker id={b}", f"Deleted partition {tp} from metadata cache in "
                       f"response to UpdateMetadata request sent by controller {ctrl} epoch {epoch} with "
                       f"correlation id {self._next_corr(ctrl)}")
