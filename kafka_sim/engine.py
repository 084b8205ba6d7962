"""The emulator's single event loop: brokers, controller and replication on one thread.

ZooKeeper watch callbacks (kazoo threads) and API calls only *post* to a queue; one engine
thread does all the work, so the controller runs one event at a time as Kafka's does. Each turn
it advances the replication model to the simulated now (exact catch-up times), lets leaders add
caught-up followers to their ISR, runs due timers (simulated time) and handles queued events.
It sleeps until the next catch-up or timer, or until an event arrives, so an idle cluster costs
almost nothing.

Failures: an exception while handling one event is logged and the loop goes on (a controller
whose fence failed is dropped, as a resigning controller is). :meth:`Engine.call` re-raises in
the caller what the posted function raised.
"""

from __future__ import annotations

import base64
import heapq
import itertools
import logging
import queue
import random
import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable

from kazoo.exceptions import ConnectionLoss, KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import Callback

from kafka_sim import zk_io
from kafka_sim.broker import SimBroker
from kafka_sim.clock import SimClock
from kafka_sim.config_notifications import NotificationReads
from kafka_sim.state_change_log import StateChangeLog
from kafka_sim.controller import Controller
from kafka_sim.replication import ReplicationModel
from kafka_sim.wire.hub import WireHub
from kafka_sim.spec import (AUTO_REBALANCE_FIRST_DELAY, LEADER_IMBALANCE_CHECK_INTERVAL, REPLICA_LAG_TIME_MAX,
                            ClusterSpec)
from kafka_sim.zk_io import ControllerMoved, EventReads, Journal
from kafka_zk import paths
from kafka_zk.codecs import (ControllerInfo, InvalidPayload, TopicPartition, decode_controller,
                             decode_controller_epoch, decode_entity_config)
from kafka_zk.throttle_lists import FOLLOWER_KEY, LEADER_KEY, parse_replica_list
from kafka_zk.errors import InvalidConfig
from kafka_zk.zk_auth import NO_AUTH, ZkCredentials

RETRY_AFTER_CONNECTION_LOSS_S = 0.2     # wall seconds: the session's reconnect, not simulated time
SETTLE_TIMEOUT_S = 2.0                  # wall seconds: kazoo's callback thread reaching our marker

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SimEvent:
    """Something that happened, at simulated ``time`` (seconds since the cluster started) and at wall
    ``wall`` (epoch seconds: what a tool's own clock read then, e.g. an executor's waits between waves)."""

    time: float
    kind: str
    topic: str | None = None
    partition: int | None = None
    broker: int | None = None
    detail: str = ""
    wall: float = field(default=0.0, compare=False)


class Engine:
    """Owns the brokers, the controller (when one of ours holds ``/controller``) and the model."""

    def __init__(self, connect: str, spec: ClusterSpec, session_timeout: float = 10.0,
                 credentials: ZkCredentials = NO_AUTH) -> None:
        self.connect = connect
        self.credentials = credentials
        self.spec = spec
        self.session_timeout = session_timeout
        self.clock = SimClock(spec.speed)
        self.state_log = StateChangeLog(None)
        self.journal = Journal(spec.journal)
        self.journal.on_write = self._wrote
        self._own_watch_writes = False     # a write of ours fired a watch of our controller (settle_own_watches)
        self.reads = EventReads()          # state znodes this event read or wrote (zk_io.EventReads)
        self.notification_reads = NotificationReads()   # /config/changes children the brokers read
        self.model = ReplicationModel(spec.network_rate, spec.produce_rate, fetch_start=spec.fetch_start_s,
                                      rejoin_start=spec.rejoin_fetch_s)
        for b, cap in (spec.disk_capacity or {}).items():
            self.model.set_disk_capacity(b, cap)
        self.rng = random.Random(spec.seed)
        self.cluster_id = base64.urlsafe_b64encode(self.rng.getrandbits(128).to_bytes(16, "big")) \
            .decode("ascii").rstrip("=")
        self.wire = WireHub(self)
        self.brokers = {b: SimBroker(self, b, rack) for b, rack in sorted(spec.brokers.items())}
        self.controller: Controller | None = None
        self.controller_epoch: int | None = None
        self.previous_controller: int | None = None
        self.wanted_controller: int | None = None
        self._electing: tuple[int, int] | None = None    # (broker, epoch) of an election not answered
        self.pending_sizes: dict[TopicPartition, float] = {}
        self.pending_joins: set[tuple[TopicPartition, int]] = set()
        self.topic_config_seq: dict[str, int] = {}
        self.events: deque[SimEvent] = deque(maxlen=200_000)
        self._events_lock = threading.Lock()
        self._queue: queue.Queue = queue.Queue()
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._tseq = itertools.count()
        self.deferred = 0      # events waiting out a modelled delay (see :meth:`defer`)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kafka-sim-engine", daemon=True)
        self.busy = False
        self.stopping = False
        self.wake_on: frozenset[str] = frozenset()   # history kinds that stop a tool's sleep (clock_runs_until)
        self.woken = False
        self.tool_wake = threading.Condition()   # notified when a sleeping tool's clock reached its limit or woke

    # ------------------------------------------------------------------ plumbing
    def start(self) -> None:
        self.clock = SimClock(self.spec.speed)      # simulated time 0 = start()
        self.state_log = StateChangeLog(self.spec.state_change_logs, self.spec.log_start)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._queue.put(("wake",))
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=30)
        self.state_log.close()

    def post(self, item: tuple) -> None:
        self._queue.put(item)

    def call(self, fn: Callable[[], Any], timeout: float = 120.0) -> Any:
        """Run ``fn`` on the engine thread and return its result (or raise its exception)."""
        if threading.current_thread() is self._thread:
            return fn()
        fut: Future = Future()
        self._queue.put(("call", fn, fut))
        return fut.result(timeout=timeout)

    def now(self) -> float:
        return self.model.now

    def _retry_soon(self, item: tuple) -> None:
        """A controller event cut by a lost connection runs again once the session may answer: a
        2.4 controller's requests are retried until the connection is back
        (``ZooKeeperClient.retryRequestsUntilConnected``), not dropped. It is dropped only when
        the controller is gone (session expired, resigned); its handlers re-read what they act on,
        so running one again does what it had left to do."""
        log.info("controller event %s cut by a lost connection: retried", item[2])
        timer = threading.Timer(RETRY_AFTER_CONNECTION_LOSS_S, self.post, args=(item,))
        timer.daemon = True
        timer.start()

    def at(self, sim_time: float, fn: Callable[[], None]) -> None:
        heapq.heappush(self._timers, (sim_time, next(self._tseq), fn))

    def defer(self, delay: float, item: tuple) -> None:
        """Post ``item`` after ``delay`` simulated seconds (at once when 0): a reaction Kafka
        takes that long to make (kafka_sim/spec.py, the per-move fixed cost). Counted in
        :attr:`deferred` until posted, so the cluster is not idle while one waits."""
        if delay <= 0:
            self.post(item)
            return
        self.deferred += 1

        def fire() -> None:
            self.deferred -= 1
            self.post(item)
        self.at(self.model.now + delay, fire)

    def history(self, kind: str, tp: TopicPartition | None = None, broker: int | None = None,
                detail: str = "", at: float | None = None) -> None:
        event = SimEvent(self.model.now if at is None else at, kind, tp.topic if tp else None,
                         tp.partition if tp else None, broker, detail, time.time())
        with self._events_lock:
            self.events.append(event)
        if kind in self.wake_on and not self.woken:
            self.woken = True                  # the sleeping tool wakes here: the clock stops at this event
            self.clock.limit(event.time)
            self.wake_tool()

    def history_items(self) -> list[SimEvent]:
        with self._events_lock:
            return list(self.events)

    def wake_tool(self) -> None:
        """Tell a tool waiting in :meth:`kafka_sim.cluster.EmulatedCluster.wait_for_clock` to look again."""
        with self.tool_wake:
            self.tool_wake.notify_all()

    def idle(self) -> bool:
        """No event queued (and, seen from another thread, none being handled)."""
        if threading.current_thread() is self._thread:
            return self._queue.empty() and not self.deferred
        return not self.busy and self._queue.empty() and not self.deferred

    # ------------------------------------------------------------------ loop
    def _run(self) -> None:
        """Simulated time runs only while this loop waits for the next event (see clock.py)."""
        self.clock.pause()
        try:
            while not self._stop.is_set():
                self._turn()
        finally:
            self.clock.resume()

    def _turn(self) -> None:
        self._step()
        self.busy = True
        try:
            self._handle_queued()
        finally:
            self.busy = False
        wait = 0.5
        due = self.model.next_event_time()
        if self._timers:
            due = self._timers[0][0] if due is None else min(due, self._timers[0][0])
        if due is not None:
            wait = min(wait, self.clock.wall_delay(due))
        if self.pending_joins:
            wait = min(wait, 0.05)
        limit = self.clock.limit_at()          # a sleeping tool's wake-up: it is told there, it does not poll
        if limit is not None:
            if self.clock.now() >= limit:
                self.wake_tool()
            else:
                wait = min(wait, self.clock.wall_delay(limit))
        self.clock.resume(until=due)
        try:
            item = self._queue.get(timeout=max(wait, 0.0005))
        except queue.Empty:
            return
        finally:
            self.clock.pause()
            limit = self.clock.limit_at()
            if limit is not None and self.clock.now() >= limit:
                self.wake_tool()
        self.busy = True
        try:
            self._step()
            self._handle(item)
            self._handle_queued()
        finally:
            self.busy = False

    def _handle_queued(self) -> None:
        """Handle every queued event, and every event our own writes are about to queue."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                if not self._own_watch_writes:
                    return
                self.settle_own_watches()
                continue
            self._step()
            self._handle(item)

    def _wrote(self, op: str, path: str) -> None:
        self.reads.written(path)
        if op == "delete":
            self.notification_reads.forget(path)
        ctrl = self.controller
        if ctrl is not None and ctrl.fires_on(op, path):
            self._own_watch_writes = True

    def settle_own_watches(self) -> None:
        """Wait (simulated time paused) until the watches our own writes fired are queued.

        A leader's ISR write fires the controller's watch on that state znode, and the reassignment
        completes when the controller handles it: a real controller hears it within milliseconds,
        but here the notification crosses ZooKeeper and kazoo's threads, and every wall millisecond
        that takes with the clock running is 3.6 simulated seconds at 3600× — on a loaded host a
        wave's end moved by minutes. ZooKeeper sends a session its notifications in order with its
        replies, so after one round trip on the controller's session every notification our writes
        caused has arrived; a marker through kazoo's callback thread (which runs watch callbacks in
        order) then means each has been posted to our queue. Bounded: a lost connection ends it."""
        self._own_watch_writes = False
        ctrl = self.controller
        if ctrl is None:
            return
        client = ctrl.zk
        try:
            client.exists_async(paths.CONTROLLER_EPOCH).get(timeout=SETTLE_TIMEOUT_S)
        except (KazooException, KazooTimeoutError):     # no session now: nothing arrives meanwhile either
            return
        posted = threading.Event()
        client.handler.dispatch_callback(Callback("watch", posted.set, ()))
        posted.wait(timeout=SETTLE_TIMEOUT_S)

    def _step(self) -> None:
        """Advance the model to now; ISR joins; due timers."""
        for c in self.model.advance(self.clock.now()):
            self.history("caught_up", c.tp, c.broker, at=c.time)
            self.pending_joins.add((c.tp, c.broker))
        self._try_joins()
        while self._timers and self._timers[0][0] <= self.model.now:
            _, _, fn = heapq.heappop(self._timers)
            self.reads.clear()
            self._guard(fn)

    def _try_joins(self) -> None:
        for tp, r in sorted(self.pending_joins):
            pd = self.model.parts.get(tp)
            if pd is None or r not in pd.caught or r not in pd.replicas:
                self.pending_joins.discard((tp, r))
                continue
            leader = self.brokers.get(pd.leader)
            if leader is None or not leader.alive:
                self.pending_joins.discard((tp, r))    # a new leader brings a new catch-up
                continue
            if not leader.registered:
                continue
            self.reads.clear()
            if self._guard(lambda: leader.change_isr(tp, add=r)):
                self.pending_joins.discard((tp, r))
                self.history("isr_join", tp, r)

    def _guard(self, fn: Callable[[], Any], on_connection_loss: Callable[[], None] | None = None) -> Any:
        try:
            return fn()
        except ConnectionLoss as exc:
            if on_connection_loss is not None and not self._stop.is_set() and not self.stopping:
                on_connection_loss()
            elif not self._stop.is_set() and not self.stopping:
                log.warning("emulator step failed: %r", exc)
        except ControllerMoved:
            self.resign()
            self.check_controller()
        except (KazooException, InvalidPayload) as exc:
            if not self._stop.is_set() and not self.stopping:
                log.warning("emulator step failed: %r", exc)
        except Exception:  # noqa: BLE001 - never let one event kill the cluster
            log.exception("emulator step failed")
        return None

    def _handle(self, item: tuple) -> None:
        self.reads.clear()                  # each event reads ZooKeeper afresh (zk_io.EventReads)
        kind = item[0]
        if kind == "call":
            _, fn, fut = item
            try:
                fut.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - handed back to the caller
                fut.set_exception(exc)
        elif kind == "controller":
            _, ctrl, what, key = item
            if ctrl is self.controller:
                self._guard(lambda: ctrl.handle(what, key), on_connection_loss=lambda: self._retry_soon(item))
        elif kind == "broker":
            _, broker, what, arg = item
            if what == "session":
                self._guard(lambda: broker.on_session(*arg))
            elif what == "config" and broker.alive:
                self._guard(lambda: broker.on_config_changes(arg))
            elif what == "controller" and broker.alive and arg == broker.incarnation:
                def rearm():
                    if broker.registered:
                        broker.client.exists(
                            paths.CONTROLLER,
                            watch=lambda e: self.post(("broker", broker, "controller", arg)))
                    self.check_controller()
                self._guard(rearm)

    # ------------------------------------------------------------------ controller election
    def _any_client(self):
        for b in self.brokers.values():
            if b.registered and b.client is not None:
                return b.client
        return None

    def resign(self) -> None:
        """Drop our controller (its session expired, or another broker holds ``/controller``)."""
        if self.controller is not None:
            self.previous_controller = self.controller.id
            self.history("controller_resigned", None, self.controller.id)
        self.controller = None

    def check_controller(self) -> None:
        """React to ``/controller`` changing: resign if someone else holds it, elect if absent."""
        client = self._any_client()
        if client is None:
            self.resign()
            return
        try:
            data, stat = client.get(paths.CONTROLLER)
        except NoNodeError:
            self.resign()
            self._elect()
            return
        holder = decode_controller(data).broker_id
        if self.controller is not None and self.controller.id != holder:
            self.resign()
        elif self.controller is None and self._electing is not None and self._electing[0] == holder:
            self._claim_unanswered_election(stat.ephemeralOwner)

    def _candidates(self) -> list[int]:
        live = [b for b, br in sorted(self.brokers.items()) if br.registered]
        self.rng.shuffle(live)
        if self.previous_controller in live and len(live) > 1:
            live.remove(self.previous_controller)
            live.append(self.previous_controller)
        if self.wanted_controller in live:
            live.remove(self.wanted_controller)
            live.insert(0, self.wanted_controller)
        return live

    def _elect(self) -> None:
        for b in self._candidates():
            broker = self.brokers[b]
            client = broker.client
            zk_io.ensure_epoch_node(client, self.journal, broker.name)
            data, stat = client.get(paths.CONTROLLER_EPOCH)
            epoch = decode_controller_epoch(data)
            payload = ControllerInfo(b, str(int(time.time() * 1000))).encode()
            self._electing = (b, epoch + 1)      # kept if a lost connection cuts the answer
            version = zk_io.try_elect(client, payload, epoch, stat.version, self.journal, broker.name)
            self._electing = None
            if version is None:
                if client.exists(paths.CONTROLLER) is not None:
                    return
                continue
            self.wanted_controller = None
            self.controller_epoch = epoch + 1
            self.history("controller_elected", None, b, detail=f"epoch={epoch + 1}")
            self._take_office(b, epoch + 1, version)
            return

    def _claim_unanswered_election(self, owner_session: int) -> None:
        """``/controller`` names the broker whose election a lost connection left unanswered: if
        its session owns the node and ``/controller_epoch`` holds the epoch it wrote, the election
        landed — it takes office, as Kafka's ``checkControllerAndEpoch`` does when the retried
        election finds the node already there. Otherwise someone else's: nothing to claim."""
        broker_id, epoch = self._electing
        broker = self.brokers[broker_id]
        client = broker.client
        if broker.registered and client is not None and client.client_id is None:
            return              # its session has not answered yet: its own reconnection checks again
        if not broker.registered or client is None or client.client_id[0] != owner_session:
            self._electing = None
            return
        data, stat = client.get(paths.CONTROLLER_EPOCH)
        self._electing = None
        if decode_controller_epoch(data) != epoch:
            return
        self.wanted_controller = None
        self.controller_epoch = epoch
        self.history("controller_elected", None, broker_id, detail=f"epoch={epoch} (its answer was lost)")
        self._take_office(broker_id, epoch, stat.version)

    def _take_office(self, broker_id: int, epoch: int, epoch_zk_version: int) -> None:
        """A fresh controller for ``broker_id`` (it holds ``/controller``) and its failover. A lost
        connection cuts the failover short (raised): the controller stays, not loaded
        (``Controller.loaded``), until :meth:`redo_failover` runs it again from the start — Kafka's
        failover sends each request again until the session answers."""
        self.reads.clear()                       # a failover reads everything from ZooKeeper
        self.controller = ctrl = Controller(self, broker_id, epoch, epoch_zk_version)
        ctrl.failover()
        if self.spec.auto_leader_rebalance:     # docs/zookeeper.md §2.1 step 9: after 5 s, then every 300 s
            self.at(self.model.now + AUTO_REBALANCE_FIRST_DELAY, lambda: self._auto_rebalance(ctrl))

    def redo_failover(self, ctrl: Controller) -> None:
        """The session of ``ctrl`` (a controller whose failover a lost connection cut short)
        answers again: a fresh controller of the same epoch loads everything and acts on it."""
        self.history("controller_failover_redone", None, ctrl.id, detail=f"epoch={ctrl.epoch}")
        self._take_office(ctrl.id, ctrl.epoch, ctrl.fenced.epoch_zk_version)

    def _auto_rebalance(self, ctrl: Controller) -> None:
        if ctrl is not self.controller:
            return
        ctrl.auto_rebalance()
        self.at(self.model.now + LEADER_IMBALANCE_CHECK_INTERVAL, lambda: self._auto_rebalance(ctrl))

    # ------------------------------------------------------------------ broker-side state
    def initial_size(self, tp: TopicPartition) -> float:
        return self.pending_sizes.pop(tp, 0.0)

    def apply_topic_config(self, topic: str, seq: int, client) -> None:
        """A ``topics/<t>`` notification: throttled-replica lists; unclean election trigger."""
        before = self.topic_config_seq.get(topic, -1)
        if before >= seq:
            return
        self.topic_config_seq[topic] = seq
        try:
            self.load_topic_config(topic, client)
            ctrl = self.controller
            if ctrl is not None and topic in ctrl.topics and ctrl.unclean_allowed(topic):
                ctrl.elect_offline_and_new(only=ctrl.tps(topic))
        except zk_io.SESSION_GONE:
            # cut short: not applied, so the broker that reads the notification again when its
            # session answers (its own last sequence number did not move) applies it again
            self.topic_config_seq[topic] = before
            raise

    def load_topic_config(self, topic: str, client) -> None:
        self.wire.topic_config_changed(topic)
        try:
            data, _ = client.get(paths.topic_config(topic))
            cfg = decode_entity_config(data).config
        except (NoNodeError, InvalidPayload):
            cfg = {}
        lists = []
        for key in (LEADER_KEY, FOLLOWER_KEY):
            try:
                lists.append(parse_replica_list(cfg.get(key, "")))
            except InvalidConfig:
                log.warning("topic %s: unparsable %s=%r ignored", topic, key, cfg.get(key))
                lists.append(frozenset())
        self.model.set_throttle_lists(topic, lists[0], lists[1])
        if lists[0] or lists[1]:
            self.history("throttle_lists", TopicPartition(topic, -1), detail=f"leader={cfg.get(LEADER_KEY)} "
                         f"follower={cfg.get(FOLLOWER_KEY)}")

    def load_all_topic_configs(self, client) -> None:
        try:
            names = client.get_children(paths.CONFIG_TOPICS)
        except NoNodeError:
            return
        for name in names:
            self.load_topic_config(name, client)

    def schedule_lag_checks(self, broker: int) -> None:
        """Lag checks for every partition that has ``broker`` as an in-sync follower."""
        for tp, pd in self.model.parts.items():
            if broker in pd.isr and broker != pd.leader:
                self.schedule_lag_check(tp, broker)

    def topic_deleted(self, topic: str) -> None:
        self.model.set_throttle_lists(topic, frozenset(), frozenset())
        self.history("topic_deleted", None, detail=topic)

    def schedule_lag_check(self, tp: TopicPartition, broker: int) -> None:
        """An in-sync follower that stopped fetching (stalled, or its broker died) is dropped by
        its leader after replica.lag.time.max — unless the controller removed it first, which
        it does when it sees the broker's registration go (not when it died as controller)."""
        def check() -> None:
            pd = self.model.parts.get(tp)
            fetching = (tp, broker) not in self.model.stalled and broker in self.model.live
            if pd is None or fetching or broker not in pd.isr or broker == pd.leader:
                return
            leader = self.brokers.get(pd.leader)
            if leader is not None and leader.registered and leader.change_isr(tp, drop=broker):
                self.history("isr_shrink", tp, broker)
            else:
                self.at(self.model.now + 1.0, check)
        self.at(self.model.now + REPLICA_LAG_TIME_MAX, check)
