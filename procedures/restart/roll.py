"""The roll: restart one batch of brokers (one broker, or one rack) safely, resumably, with a timeline.

No Airflow here: the DAG's ``roll`` step and ``kafka-runbook restart`` both call :func:`roll_batch`
with their own action (Airflow's SubprocessHook, or :func:`subprocess.run`), their own audited
writer and their own progress file. Per batch, each step recorded in the :class:`RestartBatch`
(a :class:`~procedures.batches.book.Batch`: the run's ``restart_progress.json``) before the next;
each step is a *gate* (:data:`GATES` names them in messages and reports):

1. **stop gate** — polled until :func:`procedures.restart.gates.stop_problems` is empty (nothing
   offline, under-replicated or reassigning; no partition at its min ISR on these brokers);
2. **demotion** — the batch's preferred leaderships moved away: replica orders with these brokers
   last (same replica sets, completed at once by the controller; the originals saved first), then a
   batched preferred election;
3. **restart action** — the registrations' czxids noted, the batch marked submitted, per broker: a
   watch set on its registration (the time of its removal is the broker's stop), the broker
   recorded as acted on, the action run;
4. **registration** — each broker registered again with a new session (a new czxid);
5. **in sync** — every partition the batch hosts has them back in the ISR;
6. **leaders back** — the original orders restored and a batched preferred election until each
   broker leads its preferred partitions again; the batch is done.

**Times** are ZooKeeper's (:mod:`kafka_zk.restart_events`): stopped = the deletion of the old
registration as notified, registered = the new registration's ctime, in sync / leaders back = the
mtime of the last partition state that made the brokers ISR members / leaders again. A time not
seen (a roll resumed after the event) stays empty.

**ZooKeeper outages** are ridden out (:mod:`kafka_zk.outage`): a gate's poll that meets one waits
for the session (at most ``outage_s``, :data:`kafka_zk.outage.ZK_OUTAGE_S` by default) and polls
on, its deadline moved by the wait; any other step that meets one waits the same way and is run
again from the cluster as it is (each step is idempotent: the demotion keeps the first original
order of each partition, the restart action is never run twice for a broker, see below).

**Resume.** A cleared or re-run roll calls :func:`roll_batch` again: it resumes at the gate the
progress file records. A broker whose action was started before (``acted``) is not restarted
again when it has a new session (back) or no registration (down: the registration gate waits for
it); one still on the session from before its action is given ``resume_grace_s`` for a restart
under way (a controlled shutdown takes a while), and only when its session outlasts that is the
action run again: its restart never happened (the action failed before it acted, or the roll was
killed before it did).
Each step done is logged and told to :attr:`Roll.observe` as a :class:`RollEvent` (the command line
prints it as it happens; "stopped" when a gate's poll sees the old registration gone, with the
removal's time when the watch saw it).
A dry run evaluates the gate once, plans the demotion's writes (audited, not written), logs the
commands and runs nothing.

Failure: each a :class:`RollStopped` naming the broker(s), the gate, the cause and how to resume;
the batch records the same message and the gate (``stopped_at``), a started batch is ``failed``:
:class:`StopGateHeld` (the stop gate not passed in its timeout: the partitions named),
:class:`RestartActionFailed` (the command exited non-zero: its last output line),
:class:`BrokerNotBack` (not registered again, not back in sync, or not leading again in time),
:class:`ZooKeeperLost` (an outage longer than ``outage_s``), :class:`RollInterrupted` (anything
else a gate met, e.g. a controller that does not consume an admin node: its error is the cause).
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
from kafka_zk.outage import ZK_OUTAGE_S, OutageRider, ZkOutageTooLong, is_outage, zk_cause
from kafka_zk.restart_events import DeregistrationWatch, registration, state_times
from kafka_zk.files import read_json
from procedures.restart.gates import demotion, restoration, stop_problems
from kafka_zk.snapshot import read_snapshot
from kafka_zk.waits import wait_node_gone
from kafka_zk.writer import ZkWriter
from procedures.batches.book import Batch, BatchBook, BatchState

#: a batch's steps, in order (``RestartBatch.step`` holds the last one completed)
STEPS = ("", "gated", "demoted", "restarting", "registered", "in_sync")
ACTION_FAILED = "action_failed"
#: the gate a batch is at, by the last step completed (what a stop names)
GATES = {"": "stop gate", "gated": "demotion", "demoted": "restart action", ACTION_FAILED: "restart action",
         "restarting": "registration", "registered": "in sync", "in_sync": "leaders back"}
#: ``RestartBatch.acted`` values: the broker's action started (maybe unfinished), ran, failed, or was
#: found not needed on a resume (the broker already back, or down and awaited)
STARTED, RAN, FAILED, NOT_RUN = "started", "ran", "failed", "not run again"


class RollStopped(KafkaZkError):
    """The roll stopped before the next batch (the message names the broker, the gate, the cause, the fix)."""


class StopGateHeld(RollStopped):
    """The stop gate did not pass within its timeout: partitions would go below min ISR or offline."""


class RestartActionFailed(RollStopped):
    """The restart action exited non-zero (or could not run)."""


class BrokerNotBack(RollStopped):
    """A restarted broker was not registered, in sync, or leading again within its timeout."""


class ZooKeeperLost(RollStopped):
    """ZooKeeper did not answer within the outage bound while the roll was at a gate."""


class RollInterrupted(RollStopped):
    """Something else stopped the roll at a gate (its error is the cause)."""


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
    acted: Mapping[str, str] = field(default_factory=dict)   # broker -> STARTED | RAN | FAILED | NOT_RUN
    stopped_at: str = ""             # the gate the roll stopped at (GATES), with ``message`` saying why
    outages: int = 0                 # ZooKeeper outages ridden out in this batch

    @property
    def brokers(self) -> tuple[int, ...]:
        return tuple(int(b) for b in self.items)

    @property
    def gate(self) -> str:
        """The gate this batch is at (the next step to complete)."""
        return GATES.get(self.step, self.step)


RestartBook = BatchBook[RestartBatch]


@dataclass(frozen=True)
class RollSettings:
    """Timeouts (seconds) of each gate, the poll rhythm, the min ISR assumed when no config sets it,
    how long a ZooKeeper outage is waited out, and how long a resume waits for a restart already under way."""

    stop_gate_timeout_s: float = 300.0
    register_timeout_s: float = 600.0
    in_sync_timeout_s: float = 900.0
    leaders_timeout_s: float = 300.0
    admin_timeout_s: float = 120.0
    poll_s: float = 1.0
    min_isr_default: int = 1
    outage_s: float = ZK_OUTAGE_S
    resume_grace_s: float = 60.0


#: the action: run the restart of one broker; returns its last output line, raises on failure
Action = Callable[[int], str]

#: what each step told to the observer means, in order (the log's and the command line's words)
STEP_TEXT = {
    "gate_passed": "stop gate passed",
    "demoted": "leadership moved",
    "action_run": "restart command run",
    "stopped": "stopped (from ZooKeeper: registration gone)",
    "registered": "registered again (new session)",
    "in_sync": "in sync (back in every ISR)",
    "leaders_back": "leaders back (preferred leaderships restored)",
}


@dataclass(frozen=True)
class RollEvent:
    """A step of batch ``index`` done for ``brokers`` at ``at`` (epoch seconds); ``step`` is a key of
    :data:`STEP_TEXT` ("stopped" is told per broker)."""

    index: int
    brokers: tuple[int, ...]
    step: str
    at: float
    detail: str = ""

    @property
    def who(self) -> str:
        return _who(self.brokers)

    def text(self) -> str:
        return STEP_TEXT[self.step] + (f" ({self.detail})" if self.detail else "")


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
    watches: dict = field(default_factory=dict)  # broker -> DeregistrationWatch of its restart in this process
    riders: list = field(default_factory=list)   # every outage wait made (their count of outages)
    observe: Callable[[RollEvent], None] | None = None   # told each step done (the command line prints it)

    def tell(self, index: int, brokers: tuple[int, ...], step: str, detail: str = "", at: float | None = None) -> None:
        """A step done: logged and told to :attr:`observe`."""
        event = RollEvent(index, tuple(brokers), step, self.clock() if at is None else at, detail)
        self.log.info("%s: %s", event.who, event.text())
        if self.observe is not None:
            self.observe(event)

    def snapshot(self) -> ClusterSnapshot:
        """Every partition's state and the configs (what the stop gate judges)."""
        return read_snapshot(self.client, with_configs=True)

    def hosted(self, brokers: tuple[int, ...]) -> ClusterSnapshot:
        """The states of only the partitions ``brokers`` host (the start gates' polls stay cheap on
        a large cluster: one broker hosts a fraction of the partitions)."""
        bs = frozenset(brokers)
        return read_snapshot(self.client, with_configs=False, states=lambda tp, replicas: bool(bs & set(replicas)))

    def rider(self) -> OutageRider:
        """A fresh outage wait bounded by ``outage_s`` (see :mod:`kafka_zk.outage`)."""
        rider = OutageRider(self.client, self.settings.outage_s, lambda text: self.log.warning("%s", text),
                            self.sleep)
        self.riders.append(rider)
        return rider

    def outages(self) -> int:
        """ZooKeeper outages waited out so far by this roll."""
        return sum(r.outages for r in self.riders)

    def wait(self, what: str, timeout: float, check: Callable[[], tuple[bool, str]]) -> str:
        """Poll ``check`` (→ (passed, what is still missing)) until it passes; '' or the last missing text.

        A poll that meets a ZooKeeper outage waits for the session (bounded: :class:`ZkOutageTooLong`)
        and polls on; the deadline moves by the time waited."""
        deadline = time.monotonic() + timeout
        last_log = 0.0
        rider = self.rider()
        missing = "ZooKeeper did not answer"
        while True:
            try:
                passed, missing = check()
                rider.ok()
            except Exception as exc:  # noqa: BLE001 - only an outage is ridden out; the rest propagates
                if not is_outage(exc):
                    raise
                deadline += rider.ride(exc, what)
                continue
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


def _who(brokers: Sequence[int]) -> str:
    return f"broker{'s' if len(brokers) > 1 else ''} {', '.join(map(str, brokers))}"


def roll_batch(roll: Roll, book: RestartBook, index: int) -> RestartBook:
    """Take batch ``index`` through every step not yet recorded (see module docstring); the book after."""
    b = book.batch(index)
    who = _who(b.brokers)
    last = {"book": book}

    def keep(new_book: RestartBook) -> RestartBook:
        roll.save(new_book)
        last["book"] = new_book
        return new_book

    if b.state is BatchState.DONE:
        return book
    if roll.writer.dry_run:
        return keep(_plan_only(roll, book, index, who))
    if b.state is BatchState.FAILED:
        book = keep(book.advance(index, BatchState.SUBMITTED, roll.clock(), message="", stopped_at=""))
    elif b.message and b.state is BatchState.PENDING:       # a stop at the stop gate, resumed
        book = keep(book.update(index, message="", stopped_at=""))
    while True:
        b = book.batch(index)
        if b.step == "":
            step = lambda bk: keep(_stop_gate(roll, bk, index, who))                  # noqa: E731
        elif b.step == "gated":
            step = lambda bk: _demote(roll, bk, index, keep)                            # noqa: E731
        elif b.step in ("demoted", ACTION_FAILED) or (b.step == "restarting" and not _actions_over(b)):
            step = lambda bk: _restart(roll, bk, index, who, keep)                      # noqa: E731
        elif b.step == "restarting":
            step = lambda bk: keep(_registered(roll, bk, index, who))                  # noqa: E731
        elif b.step == "registered":
            step = lambda bk: keep(_in_sync(roll, bk, index, who))                     # noqa: E731
        elif b.step == "in_sync":
            step = lambda bk: keep(_leaders_back(roll, bk, index, who))                # noqa: E731
        else:
            return book
        book = _gate(roll, book, index, who, step, last)
        if book.batch(index).state is BatchState.DONE:
            return book


def _actions_over(b: RestartBatch) -> bool:
    """Whether every broker's action of the batch has ended (not merely started: a roll killed mid-action)."""
    return bool(b.acted) and all(b.acted.get(x) in (RAN, NOT_RUN) for x in b.items)


def _gate(roll: Roll, book: RestartBook, index: int, who: str, step: Callable[[RestartBook], RestartBook],
          last: dict) -> RestartBook:
    """Run one step; an outage is waited out (bounded) and the step run again from the cluster as it is;
    anything else but a :class:`RollStopped` stops the roll here, recorded."""
    rider = roll.rider()
    before = roll.outages()
    while True:
        try:
            out = step(book)
            rider.ok()
            if roll.outages() > before:
                out = _saved(roll, out.update(index, outages=out.batch(index).outages + roll.outages() - before))
            last["book"] = out
            return out
        except RollStopped:
            raise
        except Exception as exc:  # noqa: BLE001 - every way a gate can stop is recorded, named
            book = last["book"]
            gate = book.batch(index).gate
            if is_outage(exc) and not isinstance(exc, ZkOutageTooLong):
                try:
                    rider.ride(exc, f"the {gate} of {who}")
                except ZkOutageTooLong as lost:
                    exc = lost
                else:
                    continue
            if isinstance(exc, ZkOutageTooLong):
                _fail(roll, book, index, ZooKeeperLost(
                    f"{who}: stopped at the {gate}: {exc}. {_state_of(book.batch(index))} Once ZooKeeper "
                    "answers, resume the roll: it goes on at this gate"), cause=exc)
            _fail(roll, book, index, RollInterrupted(
                f"{who}: stopped at the {gate}: {zk_cause(exc) if is_outage(exc) else f'{type(exc).__name__}: {exc}'}. "
                f"{_state_of(book.batch(index))} Fix the cause, then resume the roll: it goes on at this gate"),
                cause=exc)


def _saved(roll: Roll, book: RestartBook) -> RestartBook:
    roll.save(book)
    return book


def _state_of(b: RestartBatch) -> str:
    """What the stop leaves behind, in a sentence."""
    if b.step == "" and not b.demoted:
        return "Nothing was done to it."
    demoted = (f" {len(b.demoted)} partition(s) list it last (demoted) until the roll gives its leaderships back."
               if b.demoted else "")
    if b.step in ("", "gated", "demoted"):
        return "It was not restarted." + demoted
    return "Its restart action ran." + demoted


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


def _fail(roll: Roll, book: RestartBook, index: int, error: RollStopped, cause: BaseException | None = None,
          **changes: Any) -> None:
    """Record where (the gate) and why the roll stopped in the batch, save it, raise ``error``."""
    b = book.batch(index)
    changes = {"stopped_at": GATES.get(changes.get("step", b.step), b.gate), **changes}
    if b.state is BatchState.PENDING:
        book = book.update(index, message=str(error), **changes)
    else:
        book = book.advance(index, BatchState.FAILED, roll.clock(), message=str(error), **changes)
    roll.save(book)
    raise error from cause


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
            "for it to heal), then resume the roll: it goes on with this batch"),
            gate_problems=tuple(map(str, seen)))
    roll.tell(index, book.batch(index).brokers, "gate_passed")
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
    known = {(t, int(p)) for t, p, _, _ in b.demoted}      # a step run again keeps each first original order
    saved = tuple((tp.topic, tp.partition, list(orig), list(order)) for tp, (orig, order) in sorted(moves.items())
                  if (tp.topic, tp.partition) not in known)
    book = keep(book.update(index, demoted=tuple(b.demoted) + saved))      # the originals first, then the write
    _reorder(roll, {tp: order for tp, (_, order) in moves.items()})
    led = [p.tp for p in roll.hosted(b.brokers).partitions() if p.leader in b.brokers]
    _elect(roll, led)
    still = [p.tp for p in roll.hosted(b.brokers).partitions() if p.leader in b.brokers]
    roll.tell(index, b.brokers, "demoted", f"{len(moves)} replica order(s) changed, {len(led) - len(still)} "
              f"leadership(s) moved off, {len(still)} left to controlled shutdown"
              + (f": {_names(still)}" if still else ""))
    return keep(book.update(index, step="demoted", demoted_at=roll.clock()))


def _restart(roll: Roll, book: RestartBook, index: int, who: str, keep) -> RestartBook:
    """The action, once per broker (see the module docstring's *Resume*); the book at step ``restarting``."""
    b = book.batch(index)
    if b.step == "demoted":          # the first time: the sessions the restart must replace
        now = {str(x): registration(roll.client, x) for x in b.brokers}
        missing = sorted(int(x) for x, r in now.items() if r is None)
        if missing:
            _fail(roll, book, index, BrokerNotBack(
                f"{who}: stopped at the restart action: broker(s) {missing} not registered before their restart "
                "(another failure is under way); nothing was restarted. Find out why, then resume the roll"))
        czxids = {x: r.czxid for x, r in now.items()}
        if b.state is BatchState.PENDING:
            book = keep(book.advance(index, BatchState.SUBMITTED, roll.clock(), step="restarting", czxids=czxids))
        else:
            book = keep(book.update(index, step="restarting", czxids=czxids))
    elif b.step == "restarting" and not b.acted:     # a progress file from before ``acted``: each may have run
        book = keep(book.update(index, acted={str(x): STARTED for x in b.brokers}))
    else:
        book = keep(book.update(index, step="restarting"))
    outputs = []
    for broker in b.brokers:
        x = str(broker)
        b = book.batch(index)
        if b.acted.get(x) in (RAN, NOT_RUN):
            continue
        if not _needs_action(roll, b, broker):
            book = keep(book.update(index, acted={**b.acted, x: NOT_RUN}))
            continue
        roll.watches[broker] = DeregistrationWatch(roll.client, broker, b.czxids.get(x))
        book = keep(book.update(index, acted={**b.acted, x: STARTED}))
        try:
            outputs.append(roll.action(broker))
        except Exception as exc:  # noqa: BLE001 - any failure of the action stops the roll, named
            b = book.batch(index)
            _fail(roll, book, index, RestartActionFailed(
                f"broker {broker}: stopped at the restart action: it failed: {exc}. The roll stopped before the "
                "next broker; no other broker was touched. Check the broker; then resume the roll: a broker back "
                "with a new session or still down is not restarted again, one still on its old session is"),
                cause=exc, step=ACTION_FAILED, action_output=str(exc)[-500:], acted={**b.acted, x: FAILED})
        book = keep(book.update(index, acted={**book.batch(index).acted, x: RAN}))
    roll.tell(index, b.brokers, "action_run", ("; ".join(o for o in outputs if o)[-200:] or "no output") if outputs
              else "not run again: the restart from before went on")
    return book.update(index, action_output=("; ".join(o for o in outputs if o)[-500:]
                                             or book.batch(index).action_output))


def _needs_action(roll: Roll, b: RestartBatch, broker: int) -> bool:
    """Whether ``broker``'s action must run: never started, or started but its restart never happened."""
    x = str(broker)
    if x not in b.acted:
        return True
    before = b.czxids.get(x)
    now = registration(roll.client, broker)
    if now is None or now.czxid != before:
        roll.log.info("broker %d: %s: its action is not run again", broker,
                      "not registered (down): the registration gate waits for it" if now is None
                      else "already back with a new session")
        return False
    # same session: its restart may be under way (a stop takes a while: controlled shutdown), or never happened
    def check() -> tuple[bool, str]:
        r = registration(roll.client, broker)
        return (r is None or r.czxid != before), "still registered with the session from before its action"
    if not roll.wait(f"a restart of broker {broker} already under way", roll.settings.resume_grace_s, check):
        roll.log.info("broker %d: its restart from before went on: its action is not run again", broker)
        return False
    roll.log.info("broker %d: still on the session from before its action: its restart did not happen; running "
                  "the action again", broker)
    return True


def _registered(roll: Roll, book: RestartBook, index: int, who: str) -> RestartBook:
    b = book.batch(index)
    created: dict[str, float] = {}

    told: set[int] = set()

    def check() -> tuple[bool, str]:
        waiting = []
        for x in b.brokers:
            now = registration(roll.client, x)
            if x not in told and (now is None or now.czxid != b.czxids.get(str(x))):
                told.add(x)
                watch = roll.watches.get(x)
                roll.tell(index, (x,), "stopped", "" if now is None else "seen registered again already",
                          at=watch.removed_at if watch is not None and watch.removed_at is not None else None)
            if now is None or now.czxid == b.czxids.get(str(x)):
                waiting.append(f"broker {x} {'not registered' if now is None else 'not restarted yet (same session)'}")
            else:
                created[str(x)] = now.created_at
        return not waiting, "; ".join(waiting)
    missing = roll.wait(f"{who} to register again", roll.settings.register_timeout_s, check)
    if missing:
        _fail(roll, book, index, BrokerNotBack(
            f"{who} did not come back: stopped at the registration gate: {missing} after "
            f"{roll.settings.register_timeout_s:g}s. {_state_of(b)} The roll stopped before the next broker; no "
            "other broker was touched. Start the broker by hand (its log says why it did not register), then "
            "resume the roll: it waits for it and goes on, without restarting it again"))
    seen = [w.removed_at for x in b.brokers if (w := roll.watches.get(x)) is not None and w.removed_at is not None]
    down = min(seen) if seen else b.down_at
    roll.tell(index, b.brokers, "registered", at=max(created.values()))
    return book.update(index, step="registered", registered_at=max(created.values()), down_at=down)


def _hosted_replicas(roll: Roll, brokers: tuple[int, ...]) -> dict[TopicPartition, tuple[int, ...]]:
    """The partitions ``brokers`` host (with a state, topic not being deleted) and their replicas."""
    bs = frozenset(brokers)
    snap = roll.hosted(brokers)
    return {p.tp: p.replicas for p in snap.partitions()
            if bs & set(p.replicas) and p.has_state and p.topic not in snap.delete_markers}


def _first_times(roll: Roll, hosted: dict, times: dict, want) -> list:
    """Read the states of the awaited partitions not yet timed (one pipelined read: the poll stays as
    cheap as the snapshot it replaces); keep each one's mtime the first time ``want(replicas, state)``
    holds. A partition whose state is gone (its topic deleted) is no longer awaited. The partitions
    still not there."""
    todo = [tp for tp, replicas in hosted.items() if want(replicas, None) and tp not in times]
    states = state_times(roll.client, todo)
    for tp in todo:
        if tp not in states:
            del hosted[tp]
        elif want(hosted[tp], states[tp][0]):
            times[tp] = states[tp][1]
    return sorted(tp for tp in todo if tp in hosted and tp not in times)


def _in_sync(roll: Roll, book: RestartBook, index: int, who: str) -> RestartBook:
    b = book.batch(index)
    bs = frozenset(b.brokers)
    times: dict = {}

    def in_isr(replicas, state) -> bool:
        return state is None or (bs & set(replicas)) <= set(state.isr)

    hosted = _hosted_replicas(roll, b.brokers)

    def check() -> tuple[bool, str]:
        lagging = _first_times(roll, hosted, times, in_isr)
        return not lagging, f"{len(lagging)} partition(s) not back in the ISR: {_names(lagging)}"
    missing = roll.wait(f"{who} back in sync", roll.settings.in_sync_timeout_s, check)
    if missing:
        _fail(roll, book, index, BrokerNotBack(
            f"{who}: stopped at the in-sync gate: registered but not back in sync after "
            f"{roll.settings.in_sync_timeout_s:g}s: {missing}. {_state_of(b)} The roll stopped before the next "
            "broker. Resume the roll once they caught up (or raise in_sync_timeout_s for brokers with much to "
            "catch up)"))
    joined = max([b.registered_at or 0.0, *times.values()]) or roll.clock()
    roll.tell(index, b.brokers, "in_sync", at=joined)
    return book.update(index, step="in_sync", in_sync_at=joined)


def _leaders_back(roll: Roll, book: RestartBook, index: int, who: str) -> RestartBook:
    b = book.batch(index)
    bs = frozenset(b.brokers)
    demoted = {TopicPartition(t, int(p)): (tuple(orig), tuple(order)) for t, p, orig, order in b.demoted}
    _reorder(roll, restoration(roll.hosted(b.brokers), demoted))
    times: dict = {}

    def leading(replicas, state) -> bool:
        return replicas[0] in bs and (state is None or state.leader == replicas[0])

    hosted = _hosted_replicas(roll, b.brokers)

    def check() -> tuple[bool, str]:
        away = _first_times(roll, hosted, times, leading)
        if away:
            _elect(roll, away)
            away = _first_times(roll, hosted, times, leading)
        return not away, f"{len(away)} preferred leadership(s) not back: {_names(away)}"
    missing = roll.wait(f"{who} leading again", roll.settings.leaders_timeout_s, check)
    if missing:
        _fail(roll, book, index, BrokerNotBack(
            f"{who}: stopped at the leaders-back gate: back in sync but {missing} after "
            f"{roll.settings.leaders_timeout_s:g}s of preferred elections. The roll stopped before the next broker; "
            "run a preferred leader election, then resume the roll"))
    back = max([b.in_sync_at or 0.0, *times.values()]) or roll.clock()
    roll.tell(index, b.brokers, "leaders_back", at=back)
    return book.advance(index, BatchState.DONE, roll.clock(), leaders_back_at=back, message="", stopped_at="")
