"""The roll: restart one batch of brokers (one broker, or one rack) safely, resumably, with a timeline.

No Airflow here: the DAG's ``roll`` step and ``kafka-runbook restart`` both call :func:`roll_batch`
with their own action (Airflow's SubprocessHook, or :func:`subprocess.run`), their own audited
writer and their own progress file. Per batch, each step recorded in the :class:`RestartBatch`
(a :class:`~operators.batches.book.Batch`: the run's ``restart_progress.json``) before the next:

1. **stop gate** — polled until :func:`kafka_zk.restart_gates.stop_problems` is empty (nothing
   offline, under-replicated or reassigning; no partition at its min ISR on these brokers);
2. **demote** — the batch's preferred leaderships moved away: replica orders with these brokers
   last (same replica sets, completed at once by the controller; the originals saved first), then a
   batched preferred election;
3. **restart** — the registrations' czxids noted, the batch marked submitted, the action run per
   broker;
4. **registered** — each broker registered again with a new session (a new czxid);
5. **in sync** — every partition the batch hosts has them back in the ISR;
6. **leaders back** — the original orders restored and a batched preferred election until each
   broker leads its preferred partitions again; the batch is done.

A cleared or retried task calls :func:`roll_batch` again: it resumes at the step the progress file
records (a batch already restarted is not restarted again; one whose action failed runs it again).
A dry run evaluates the gate once, plans the demotion's writes (audited, not written), logs the
commands and runs nothing.

Failure (each a :class:`RollStopped`, naming the broker, the cause and how to resume; the batch's
message records it): :class:`StopGateHeld` (the stop gate not passed in its timeout: the
partitions named), :class:`RestartActionFailed` (the command exited non-zero: its last output
line), :class:`BrokerNotBack` (not registered again, not back in sync, or not leading again in
time). A controller that does not consume an admin node raises
:class:`~kafka_zk.waits.ZnodeNotConsumed`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from kazoo.client import KazooClient

from kafka_zk import paths
from kafka_zk.admin.election import election_batches, preferred_election_candidates, submit_preferred_election
from kafka_zk.admin.reassignment import submit_reassignment
from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import InvalidInput, KafkaZkError
from kafka_zk.model import ClusterSnapshot
from kafka_zk.run_folder import read_json
from kafka_zk.restart_gates import (demotion, leaders_away, not_in_sync, registration_czxid, restoration,
                                    stop_problems)
from kafka_zk.snapshot import read_snapshot
from kafka_zk.waits import wait_node_gone
from kafka_zk.writer import ZkWriter
from operators.batches.book import Batch, BatchBook, BatchState

#: a batch's steps, in order (``RestartBatch.step`` holds the last one completed)
STEPS = ("", "gated", "demoted", "restarting", "registered", "in_sync")
ACTION_FAILED = "action_failed"


class RollStopped(KafkaZkError):
    """The roll stopped before the next batch (the message names the broker, the cause, the fix)."""


class StopGateHeld(RollStopped):
    """The stop gate did not pass within its timeout: partitions would go below min ISR or offline."""


class RestartActionFailed(RollStopped):
    """The restart action exited non-zero (or could not run)."""


class BrokerNotBack(RollStopped):
    """A restarted broker was not registered, in sync, or leading again within its timeout."""


@dataclass(frozen=True)
class RestartBatch(Batch):
    """One batch of a roll (its brokers as text), where it stands, and its timeline (epoch seconds)."""

    ITEMS_KEY = "brokers"

    step: str = ""
    gate_passed_at: float | None = None
    demoted_at: float | None = None
    down_at: float | None = None
    registered_at: float | None = None
    in_sync_at: float | None = None
    leaders_back_at: float | None = None
    czxids: Mapping[str, Any] = field(default_factory=dict)
    demoted: tuple = ()              # (topic, partition, original replicas, demoted replicas)
    gate_problems: tuple = ()        # what the stop gate named (last evaluation)
    action_output: str = ""

    @property
    def brokers(self) -> tuple[int, ...]:
        return tuple(int(b) for b in self.items)


RestartBook = BatchBook[RestartBatch]


@dataclass(frozen=True)
class RollSettings:
    """Timeouts (seconds) of each gate, the poll rhythm, and the min ISR assumed when no config sets it."""

    stop_gate_timeout_s: float = 300.0
    register_timeout_s: float = 600.0
    in_sync_timeout_s: float = 900.0
    leaders_timeout_s: float = 300.0
    admin_timeout_s: float = 120.0
    poll_s: float = 1.0
    min_isr_default: int = 1


#: the action: run the restart of one broker; returns its last output line, raises on failure
Action = Callable[[int], str]


@dataclass
class Roll:
    """What :func:`roll_batch` works with: the cluster, the writer, the action, the book and where it goes."""

    client: KazooClient
    writer: ZkWriter
    action: Action
    settings: RollSettings
    save: Callable[[RestartBook], None]
    log: logging.Logger
    describe: Callable[[int], str] = str         # the command the action runs for a broker (logs, dry run)
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep

    def snapshot(self) -> ClusterSnapshot:
        """Every partition's state and the configs (what the stop gate judges)."""
        return read_snapshot(self.client, with_configs=True)

    def hosted(self, brokers: tuple[int, ...]) -> ClusterSnapshot:
        """The states of only the partitions ``brokers`` host (the start gates' polls stay cheap on
        a large cluster: one broker hosts a fraction of the partitions)."""
        bs = frozenset(brokers)
        return read_snapshot(self.client, with_configs=False, states=lambda tp, replicas: bool(bs & set(replicas)))

    def wait(self, what: str, timeout: float, check: Callable[[], tuple[bool, str]]) -> str:
        """Poll ``check`` (→ (passed, what is still missing)) until it passes; '' or the last missing text."""
        deadline = time.monotonic() + timeout
        last_log = 0.0
        while True:
            passed, missing = check()
            if passed:
                return ""
            if time.monotonic() >= deadline:
                return missing
            if time.monotonic() - last_log >= 30:
                self.log.info("waiting for %s: %s", what, missing)
                last_log = time.monotonic()
            self.sleep(self.settings.poll_s)


def _names(tps, limit: int = 10) -> str:
    tps = list(tps)
    more = f" and {len(tps) - limit} more" if len(tps) > limit else ""
    return ", ".join(map(str, tps[:limit])) + more


def roll_batch(roll: Roll, book: RestartBook, index: int) -> RestartBook:
    """Take batch ``index`` through every step not yet recorded (see module docstring); the book after."""
    b = book.batch(index)
    brokers = b.brokers
    who = f"broker{'s' if len(brokers) > 1 else ''} {', '.join(map(str, brokers))}"

    def keep(new_book: RestartBook) -> RestartBook:
        roll.save(new_book)
        return new_book

    if b.state is BatchState.DONE:
        return book
    if roll.writer.dry_run:
        return keep(_plan_only(roll, book, index, who))
    if b.state is BatchState.FAILED:
        book = keep(book.advance(index, BatchState.SUBMITTED, roll.clock(), message=""))
        b = book.batch(index)
    if b.step == "":
        book = keep(_stop_gate(roll, book, index, who))
        b = book.batch(index)
    if b.step == "gated":
        book = _demote(roll, book, index, keep)
        b = book.batch(index)
    if b.step in ("demoted", ACTION_FAILED):
        book = _restart(roll, book, index, who, keep)
        b = book.batch(index)
    if b.step == "restarting":
        book = keep(_registered(roll, book, index, who))
        b = book.batch(index)
    if b.step == "registered":
        book = keep(_in_sync(roll, book, index, who))
        b = book.batch(index)
    if b.step == "in_sync":
        book = keep(_leaders_back(roll, book, index, who))
    return book


def load_progress(path: str | Path, batches: Sequence[Sequence[int]]) -> RestartBook:
    """The roll's progress file for the approved ``batches`` (a fresh book when there is none).

    The same batches in another order (a re-plan after the controller moved, e.g. once the roll
    restarted it) keep what each batch recorded, in the new order: a broker is never restarted twice.
    Other batches while brokers were already restarted are refused, naming them."""
    items = [tuple(str(b) for b in batch) for batch in batches]
    doc = read_json(path)
    if doc is not None:
        old = BatchBook.from_json(doc, RestartBatch, str(path))
        recorded = {tuple(b.items): b for b in old.batches}
        if sorted(recorded) == sorted(items) and len(old.batches) == len(items):
            return BatchBook(tuple(replace(recorded[it], index=i) for i, it in enumerate(items)))
        touched = [x for b in old.batches if b.state is not BatchState.PENDING for x in b.items]
        if touched:
            raise InvalidInput(
                f"{path} records a roll of other batches ({[list(b.items) for b in old.batches]}) that already "
                f"restarted broker(s) {', '.join(touched)}, but the approved plan is now {[list(i) for i in items]}: "
                "the plan changed after the roll started. Start a new run for the brokers left, or move the file "
                "away to restart every broker of the new plan")
    return BatchBook.fresh(RestartBatch, items)


def roll_all(roll: Roll, book: RestartBook, before_batch: Callable[[RestartBook, int], None] | None = None
             ) -> RestartBook:
    """Every batch not done yet, in order; ``before_batch(book, index)`` runs before a batch is started
    (the maintenance-window check: it raises to stop or defer)."""
    for b in book.batches:
        if b.state is BatchState.DONE:
            continue
        if before_batch is not None and b.state is BatchState.PENDING and b.step == "":
            before_batch(book, b.index)
        book = roll_batch(roll, book, b.index)
    return book


def _fail(roll: Roll, book: RestartBook, index: int, error: RollStopped, **changes: Any) -> None:
    b = book.batch(index)
    if b.state is BatchState.PENDING:
        book = book.update(index, message=str(error), **changes)
    else:
        book = book.advance(index, BatchState.FAILED, roll.clock(), message=str(error), **changes)
    roll.save(book)
    raise error


def _plan_only(roll: Roll, book: RestartBook, index: int, who: str) -> RestartBook:
    b = book.batch(index)
    snap = roll.snapshot()
    problems = stop_problems(snap, b.brokers, roll.settings.min_isr_default)
    moves = demotion(snap, b.brokers)
    if moves:
        submit_reassignment(roll.writer, snap, {tp: order for tp, (_, order) in moves.items()})
    for broker in b.brokers:
        roll.log.info("dry run: would restart broker %d with: %s", broker, roll.describe(broker))
    roll.log.info("dry run: %s: stop gate %s; %d leadership(s) would move first", who,
                  "passes" if not problems else f"would hold ({_names(problems)})", len(moves))
    return book.advance(index, BatchState.PLANNED, roll.clock(), gate_problems=tuple(map(str, problems)),
                        message="dry run: planned only")


def _stop_gate(roll: Roll, book: RestartBook, index: int, who: str) -> RestartBook:
    brokers = book.batch(index).brokers
    seen: list = []

    def check() -> tuple[bool, str]:
        problems = stop_problems(roll.snapshot(), brokers, roll.settings.min_isr_default)
        seen[:] = problems
        return not problems, _names(problems)
    missing = roll.wait(f"the stop gate of {who}", roll.settings.stop_gate_timeout_s, check)
    if missing:
        _fail(roll, book, index, StopGateHeld(
            f"{who} not stopped: the stop gate did not pass within {roll.settings.stop_gate_timeout_s:g}s; "
            f"{len(seen)} partition(s) hold it: {missing}. Nothing was done to {who}; fix the cluster (or wait "
            "for it to heal), then clear the roll task: it resumes with this batch"),
            gate_problems=tuple(map(str, seen)))
    roll.log.info("%s: stop gate passed", who)
    return book.update(index, step="gated", gate_passed_at=roll.clock(), gate_problems=())


def _elect(roll: Roll, partitions) -> None:
    """A batched preferred election of ``partitions`` (those eligible now), each batch waited on."""
    if roll.client.exists(paths.PREFERRED_REPLICA_ELECTION) is not None:
        wait_node_gone(roll.client, paths.PREFERRED_REPLICA_ELECTION, roll.settings.admin_timeout_s)
    wanted = set(partitions)

    def read() -> ClusterSnapshot:
        return read_snapshot(roll.client, with_configs=False, states=lambda tp, replicas: tp in wanted)
    snap = read()
    eligible, _ = preferred_election_candidates(snap, wanted)
    for i, batch in enumerate(election_batches(list(eligible))):
        if i:
            snap = read()
        submit_preferred_election(roll.writer, snap, batch)
        wait_node_gone(roll.client, paths.PREFERRED_REPLICA_ELECTION, roll.settings.admin_timeout_s)


def _reorder(roll: Roll, targets: Mapping[TopicPartition, tuple[int, ...]]) -> None:
    """One same-set reassignment of ``targets`` (completed at once by the controller), waited on."""
    if not targets:
        return
    if roll.client.exists(paths.REASSIGN_PARTITIONS) is not None:
        wait_node_gone(roll.client, paths.REASSIGN_PARTITIONS, roll.settings.admin_timeout_s)
    submit_reassignment(roll.writer, read_snapshot(roll.client, with_configs=False), targets)
    wait_node_gone(roll.client, paths.REASSIGN_PARTITIONS, roll.settings.admin_timeout_s)


def _demote(roll: Roll, book: RestartBook, index: int, keep) -> RestartBook:
    b = book.batch(index)
    moves = demotion(roll.hosted(b.brokers), b.brokers)
    saved = tuple((tp.topic, tp.partition, list(orig), list(order)) for tp, (orig, order) in sorted(moves.items()))
    book = keep(book.update(index, demoted=tuple(b.demoted) + saved))      # the originals first, then the write
    _reorder(roll, {tp: order for tp, (_, order) in moves.items()})
    led = [p.tp for p in roll.hosted(b.brokers).partitions() if p.leader in b.brokers]
    _elect(roll, led)
    still = [p.tp for p in roll.hosted(b.brokers).partitions() if p.leader in b.brokers]
    roll.log.info("demoted: %d replica order(s) changed, %d leadership(s) to move, %d left to controlled shutdown%s",
                  len(moves), len(led), len(still), f" ({_names(still)})" if still else "")
    return keep(book.update(index, step="demoted", demoted_at=roll.clock()))


def _restart(roll: Roll, book: RestartBook, index: int, who: str, keep) -> RestartBook:
    b = book.batch(index)
    czxids = {str(x): registration_czxid(roll.client, x) for x in b.brokers}
    missing = sorted(int(x) for x, c in czxids.items() if c is None)
    if missing and b.step != ACTION_FAILED:
        _fail(roll, book, index, BrokerNotBack(
            f"broker(s) {missing} not registered before their restart: another failure is under way; nothing "
            "was restarted. Find out why, then clear the roll task"))
    if b.step == ACTION_FAILED:       # a re-run after a failed action: the registrations before it still count
        czxids = {x: (b.czxids.get(x) if b.czxids.get(x) is not None else c) for x, c in czxids.items()}
    if b.state is BatchState.PENDING:
        book = keep(book.advance(index, BatchState.SUBMITTED, roll.clock(), step="restarting", czxids=czxids))
    else:
        book = keep(book.update(index, step="restarting", czxids=czxids))
    outputs = []
    for broker in b.brokers:
        try:
            outputs.append(roll.action(broker))
        except Exception as exc:  # noqa: BLE001 - any failure of the action stops the roll, named
            _fail(roll, book, index, RestartActionFailed(
                f"the restart action of broker {broker} failed: {exc}. The roll stopped before the next broker; "
                "no other broker was touched. Check the broker by hand, then clear the roll task: it runs the "
                "action again for this batch"), step=ACTION_FAILED, action_output=str(exc)[-500:])
    roll.log.info("%s: restart action run (%s)", who, "; ".join(o for o in outputs if o) or "no output")
    return book.update(index, action_output="; ".join(o for o in outputs if o)[-500:])


def _registered(roll: Roll, book: RestartBook, index: int, who: str) -> RestartBook:
    b = book.batch(index)
    down: dict[str, float] = {}

    def check() -> tuple[bool, str]:
        waiting = []
        for x in b.brokers:
            now = registration_czxid(roll.client, x)
            if now != b.czxids.get(str(x)):
                down.setdefault(str(x), roll.clock())
            if now is None or now == b.czxids.get(str(x)):
                waiting.append(f"broker {x} {'not registered' if now is None else 'not restarted yet (same session)'}")
        return not waiting, "; ".join(waiting)
    missing = roll.wait(f"{who} to register again", roll.settings.register_timeout_s, check)
    if missing:
        _fail(roll, book, index, BrokerNotBack(
            f"{who} did not come back: {missing} after {roll.settings.register_timeout_s:g}s. The roll stopped "
            "before the next broker; no other broker was touched. Start the broker by hand (its log says why it "
            "did not register), then clear the roll task: it waits for it and goes on"))
    roll.log.info("%s: registered again", who)
    return book.update(index, step="registered", registered_at=roll.clock(),
                       down_at=min(down.values()) if down else None)


def _in_sync(roll: Roll, book: RestartBook, index: int, who: str) -> RestartBook:
    b = book.batch(index)

    def check() -> tuple[bool, str]:
        lagging = not_in_sync(roll.hosted(b.brokers), b.brokers)
        return not lagging, f"{len(lagging)} partition(s) not back in the ISR: {_names(lagging)}"
    missing = roll.wait(f"{who} back in sync", roll.settings.in_sync_timeout_s, check)
    if missing:
        _fail(roll, book, index, BrokerNotBack(
            f"{who} registered but not back in sync after {roll.settings.in_sync_timeout_s:g}s: {missing}. The "
            "roll stopped before the next broker. Clear the roll task once they caught up (or raise "
            "in_sync_timeout_s for brokers with much to catch up)"))
    roll.log.info("%s: back in every ISR", who)
    return book.update(index, step="in_sync", in_sync_at=roll.clock())


def _leaders_back(roll: Roll, book: RestartBook, index: int, who: str) -> RestartBook:
    b = book.batch(index)
    demoted = {TopicPartition(t, int(p)): (tuple(orig), tuple(order)) for t, p, orig, order in b.demoted}
    _reorder(roll, restoration(roll.hosted(b.brokers), demoted))

    def check() -> tuple[bool, str]:
        away = leaders_away(roll.hosted(b.brokers), b.brokers)
        if away:
            _elect(roll, away)
            away = leaders_away(roll.hosted(b.brokers), b.brokers)
        return not away, f"{len(away)} preferred leadership(s) not back: {_names(away)}"
    missing = roll.wait(f"{who} leading again", roll.settings.leaders_timeout_s, check)
    if missing:
        _fail(roll, book, index, BrokerNotBack(
            f"{who} back in sync but {missing} after {roll.settings.leaders_timeout_s:g}s of preferred elections. "
            "The roll stopped before the next broker; run preferred_leader_election, then clear the roll task"))
    roll.log.info("%s: leaderships back; done", who)
    now = roll.clock()
    return book.advance(index, BatchState.DONE, now, leaders_back_at=now, message="")
