"""Faults on demand for :class:`kafka_sim.cluster.EmulatedCluster` (mixed into it).

Kill (session closed at once, or expiring later as after a SIGKILL), controlled shutdown,
restart (new session, new czxid), a whole process restart with Kafka 2.4.1's timing
(:meth:`FaultsMixin.restart_process`: what ``systemctl restart kafka`` does), session expiry while the broker keeps running, controller
move (``/controller`` deleted as an operator would), stalled replica, a replica failing to
append (RecordTooLargeException after max.message.bytes was lowered), slow broker, a corrupt
record on one replica (served over the wire, see :mod:`kafka_sim.wire`). Each runs
on the engine thread, so it lands between two controller events.

Failure: an unknown broker id or a bad value raises :class:`kafka_zk.errors.InvalidInput`;
a controller that does not move in time raises :class:`EmulatorError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from kazoo.client import KazooClient

from kafka_sim import zk_io
from kafka_sim.session_close import close_session, session_ended
from kafka_zk import paths
from kafka_zk.codecs import TopicPartition
from kafka_zk.connect import parse_connect_string
from kafka_zk.errors import InvalidInput, KafkaZkError

if TYPE_CHECKING:
    from kafka_sim.broker import SimBroker
    from kafka_sim.engine import Engine


#: Kafka 2.4.1's stop, measured in tests/vectors/real_kafka_2_4_1/d.json (ZooKeeper commit times,
#: ``zk_writes``). SIGTERM starts a controlled shutdown (``KafkaServer.controlledShutdown``): the broker
#: asks the controller, which moves every leadership it can off the broker, drops it from the ISRs and
#: answers with the partitions the broker still leads with other replicas. An empty answer: the
#: process exits ~1.1 s later (broker 2, which led td-2 [2,1]: SIGTERM 37.840 → leadership moved
#: 37.878 → session closed 38.924, 1.08 s). Otherwise it sleeps ``controlled.shutdown.retry.backoff.ms``
#: (5 s) and asks again, ``controlled.shutdown.max.retries`` (3) times in all, sleeping after the last
#: too, then shuts down uncleanly: 3 × 5 s + ~1.1 s (broker 0, which also led ta4-1 [0,9] whose other
#: replica, broker 9, never registered: SIGTERM 1.085 → td leaderships moved 1.217-1.334 → session
#: closed 17.247, 16.16 s; 16.3 s between the polled snapshots).
CONTROLLED_SHUTDOWN_RETRIES = 3
CONTROLLED_SHUTDOWN_BACKOFF_S = 5.0
SHUTDOWN_EXIT_S = 1.1
#: the retry path's whole stop: every attempt answered with a partition still led
CONTROLLED_SHUTDOWN_RETRY_S = CONTROLLED_SHUTDOWN_RETRIES * CONTROLLED_SHUTDOWN_BACKOFF_S + SHUTDOWN_EXIT_S
#: from the start of the process to its new registration (d: 5.98 and 6.57 s; e-3 7.3, f 7.0 s: JVM
#: start and log loading). A SIGKILLed broker's registration lingers 6.3-7.9 s (the 6 s session
#: timeout): :meth:`FaultsMixin.kill_broker`'s ``expire_after``. The rejoin after the registration is
#: the replication model's (``ClusterSpec.rejoin_fetch_s``, kafka_sim/spec.py).
START_TO_REGISTRATION_S = 6.9
KILL_SESSION_LINGER_S = 7.8


class EmulatorError(KafkaZkError):
    """The emulator could not do what was asked in time (start, move the controller...)."""


class FaultsMixin:
    """Fault injection; expects ``_engine``, ``_tool``, ``connect_string``, ``_broker()``."""

    _engine: "Engine"
    _tool: KazooClient | None
    connect_string: str

    if TYPE_CHECKING:  # provided by EmulatedCluster
        def _broker(self, broker_id: int) -> "SimBroker": ...

        def wait_until(self, predicate, timeout: float) -> bool: ...

        def controller_id(self) -> int: ...

    def kill_broker(self, broker_id: int, expire_after: float = 0.0) -> None:
        """Kill the broker (SIGKILL). Its session is closed at once, or — closer to a real
        SIGKILL — expires ``expire_after`` simulated seconds later (2.4.1 with the default 6 s
        session timeout: ~7.8 s), the registration (and ``/controller``) staying until then."""
        b = self._broker(broker_id)
        if expire_after < 0:
            raise InvalidInput(f"expire_after {expire_after!r} must be ≥ 0 simulated seconds")
        eng = self._engine

        def kill() -> None:
            if not b.alive:
                return
            if eng.controller is not None and eng.controller.id == broker_id:
                eng.resign()
            eng.model.broker_down(broker_id)
            eng.schedule_lag_checks(broker_id)
            eng.history("broker_killed", None, broker_id)
            if expire_after == 0:
                b.close()
                return
            b.alive = b.registered = False       # the process is gone; its session is not yet
            eng.wire.close(broker_id)             # ... and its listener with it
            inc = b.incarnation

            def expire() -> None:
                if b.incarnation == inc and b.client is not None:
                    b.close()
                    eng.history("session_expired", None, broker_id)
            eng.at(eng.now() + expire_after, expire)
        eng.call(kill)

    def shutdown_broker(self, broker_id: int, close_after: float | None = 0.0) -> None:
        """Controlled shutdown (SIGTERM): leaderships moved and ISRs shrunk first, then the
        session closes — at once, ``close_after`` simulated seconds later, or (``None``) when
        Kafka 2.4.1's broker would exit: ~1.1 s after a controller's answer that it leads nothing
        with other replicas any more, 16.1 s when every attempt leaves one (the retries above)."""
        b = self._broker(broker_id)
        eng = self._engine
        if close_after is None:
            eng.call(lambda: self._controlled_stop(b, None))
            return

        def shutdown() -> None:
            if not b.alive:
                return
            eng.model.broker_down(broker_id)       # its fetchers stop first
            if eng.controller is not None:
                eng._guard(lambda: eng.controller.controlled_shutdown(broker_id))
        eng.call(shutdown)
        self.kill_broker(broker_id, expire_after=close_after)

    def _controlled_stop(self, b: "SimBroker", then: Callable[[], None] | None) -> None:
        """On the engine thread: 2.4.1's controlled shutdown of a running broker (see the constants),
        attempts and exit on the simulated clock; ``then()`` runs once its session closed."""
        eng = self._engine
        if not b.alive or b.stopping:
            return
        b.stopping = True
        inc = b.incarnation
        eng.model.broker_down(b.id)                # its fetchers stop first
        eng.history("controlled_shutdown_started", None, b.id)
        attempts = [0]

        def exit_process() -> None:
            if b.incarnation != inc or not b.alive:
                return
            if eng.controller is not None and eng.controller.id == b.id:
                eng.resign()
            eng.schedule_lag_checks(b.id)
            b.close()
            eng.history("broker_stopped", None, b.id, detail=f"after {attempts[0]} controlled shutdown attempt(s)")
            if then is not None:
                then()

        def attempt() -> None:
            if b.incarnation != inc or not b.alive:
                return
            attempts[0] += 1
            ctrl = eng.controller
            # no controller of ours, or its request cut short by a lost connection: a failed attempt
            left = eng._guard(lambda: ctrl.controlled_shutdown(b.id)) if ctrl is not None else None
            done = left is not None and not left
            eng.history("controlled_shutdown_answer", None, b.id, detail=(
                "succeeded" if done else "no answer" if left is None
                else f"{len(left)} partition(s) still led: {', '.join(map(str, sorted(left)[:5]))}"))
            if done:
                eng.at(eng.now() + SHUTDOWN_EXIT_S, exit_process)
            elif attempts[0] < CONTROLLED_SHUTDOWN_RETRIES:
                eng.at(eng.now() + CONTROLLED_SHUTDOWN_BACKOFF_S, attempt)
            else:                                  # the last backoff, then an unclean shutdown
                eng.at(eng.now() + CONTROLLED_SHUTDOWN_BACKOFF_S + SHUTDOWN_EXIT_S, exit_process)
        attempt()

    def restart_broker(self, broker_id: int) -> None:
        """Start a killed broker again: new session, new registration (new czxid)."""
        b = self._broker(broker_id)
        self._engine.call(lambda: self._start_now(b))

    def _start_now(self, b: "SimBroker") -> None:
        """On the engine thread: start a broker that is not running (no-op when it is)."""
        if b.alive:
            return
        eng = self._engine
        if b.client is not None:              # killed, session not expired yet
            b.close()
        b.start()
        eng.model.broker_up(b.id)
        eng.history("broker_started", None, b.id)
        eng.check_controller()

    def restart_process(self, broker_id: int, stop_s: float | None = None, start_s: float | None = None) -> None:
        """Restart the broker's process as ``systemctl restart kafka`` does, with 2.4.1's timing:
        SIGTERM (controlled shutdown at once), the session closed when 2.4.1's broker would exit
        (:meth:`shutdown_broker` with ``close_after=None``: ~1.1 s when the controller moved every
        leadership, 16.1 s on the retry path) or ``stop_s`` simulated seconds later when given, the
        new process registered ``start_s`` after that (default :data:`START_TO_REGISTRATION_S`), new
        session and czxid; its replicas rejoin the ISRs after their first fetch
        (``ClusterSpec.rejoin_fetch_s``). Returns at once; the rest happens on the emulator's clock.
        A broker that is not running (or already stopping) is refused."""
        b = self._broker(broker_id)
        start = START_TO_REGISTRATION_S if start_s is None else start_s
        for name, value in (("stop_s", stop_s), ("start_s", start)):
            if value is None and name == "stop_s":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise InvalidInput(f"restart: {name} {value!r} must be ≥ 0 simulated seconds")
        eng = self._engine
        if not eng.call(lambda: b.alive and not b.stopping):
            raise InvalidInput(f"broker {broker_id} is not running (or already stopping): "
                               f"restart-broker {broker_id} starts a stopped one")

        def start_later() -> None:
            inc = b.incarnation

            def start_again() -> None:
                if b.incarnation == inc:          # nobody started it meanwhile
                    self._start_now(b)
            eng.at(eng.now() + float(start), start_again)
        if stop_s is None:
            eng.call(lambda: self._controlled_stop(b, start_later))
            return
        self.shutdown_broker(broker_id, close_after=float(stop_s))

        def schedule() -> None:
            inc = b.incarnation

            def start_again() -> None:
                if b.incarnation == inc:          # nobody started it meanwhile
                    self._start_now(b)
            eng.at(eng.now() + float(stop_s) + float(start), start_again)
        eng.call(schedule)

    def expire_session(self, broker_id: int, timeout: float = 60.0) -> None:
        """Expire the broker's ZooKeeper session (as ZooKeeper does after a long pause); the
        broker keeps running and registers again with a new session.

        A second client joins the session and closes it (:func:`kafka_sim.session_close.close_session`:
        always stopped, so it never goes on holding the session; an attempt the broker's client
        outran is tried again). Returns once the broker's client has seen its session end;
        :class:`EmulatorError` if it has not within ``timeout`` wall seconds."""
        b = self._broker(broker_id)
        eng = self._engine
        client = eng.call(lambda: b.client if b.alive else None)
        if client is None:
            raise InvalidInput(f"broker {broker_id} is not running: restart_broker({broker_id}) first")
        session_id, password = client.client_id

        why = close_session(parse_connect_string(self.connect_string).hosts_text, (session_id, password),
                            lambda: session_ended(client, session_id), timeout, eng.credentials.kazoo_kwargs())
        if why is not None:
            raise EmulatorError(f"could not expire broker {broker_id}'s session within {timeout:g}s "
                                f"({why}); is ZooKeeper at {self.connect_string} overloaded?")

    def move_controller(self, to: int | None = None, timeout: float = 30.0) -> int:
        """Delete ``/controller`` (as an operator would); ``to`` wins the election when live."""
        eng = self._engine
        if to is not None:
            b = self._broker(to)
            if not eng.call(lambda: b.registered):
                raise InvalidInput(f"broker {to} is not live: restart_broker({to}) first")
        before = self.controller_id()
        epoch = eng.call(lambda: eng.controller.epoch if eng.controller is not None else -1)

        def bounce() -> None:
            eng.wanted_controller = to
            zk_io.tool_delete(self._tool, paths.CONTROLLER, eng.journal)
        eng.call(bounce)
        # a new election (higher epoch) must have happened: the old controller object may still
        # be in place, with the wanted id, until the engine has handled the deletion
        ok = self.wait_until(lambda: eng.controller is not None and eng.controller.epoch > epoch
                             and eng.idle() and (to is None or eng.controller.id == to)
                             and self.controller_id() == eng.controller.id, timeout)
        if not ok:
            raise EmulatorError(f"controller did not move from {before} within {timeout:g}s")
        return self.controller_id()

    def stall_replica(self, topic: str, partition: int, broker: int, stalled: bool = True) -> None:
        """Stop (or resume) the replica's fetching; an in-sync one leaves the ISR after
        replica.lag.time.max.ms (10 s simulated)."""
        def apply(tp: TopicPartition, pd) -> None:
            self._engine.model.set_stalled(tp, broker, stalled)
            if stalled and broker in pd.isr and broker != pd.leader:
                self._engine.schedule_lag_check(tp, broker)
        self._on_replica("stall-replica", topic, partition, broker, apply)

    def fail_append(self, topic: str, partition: int, broker: int, failing: bool = True) -> None:
        """Broker ``broker``'s replica of the partition fails to append what it fetches (as a
        follower does with RecordTooLargeException once the topic's max.message.bytes was lowered
        below a batch already in the leader's log): it stops progressing while its broker stays up
        and registered, leaves the ISR after replica.lag.time.max.ms if it was in it, and a move
        that adds it never finishes. The cause is recorded in the history (kind
        ``append_failed``), as it would be in that broker's server.log; ``failing=False`` ends it
        (the operator raised max.message.bytes back)."""
        def apply(tp: TopicPartition, pd) -> None:
            eng = self._engine
            eng.model.set_stalled(tp, broker, failing)
            eng.history("append_failed" if failing else "append_resumed", tp, broker,
                        "RecordTooLargeException: fetched batch larger than the topic's max.message.bytes"
                        if failing else "")
            if failing and broker in pd.isr and broker != pd.leader:
                eng.schedule_lag_check(tp, broker)
        self._on_replica("fail-append", topic, partition, broker, apply)

    def _on_replica(self, verb: str, topic: str, partition: int, broker: int, apply) -> None:
        """Run ``apply(tp, partition data)`` on the engine's thread for an existing partition of a
        known broker; a partition that does not exist is refused, naming it and the fix."""
        self._broker(broker)
        tp = TopicPartition(topic, partition)
        eng = self._engine

        def checked() -> None:
            pd = eng.model.parts.get(tp)
            if pd is None:
                raise InvalidInput(f"{verb}: partition {topic}-{partition} does not exist in this cluster; "
                                   "name a partition of an existing topic (kafka-runbook topics --describe)")
            apply(tp, pd)
        eng.call(checked)

    def corrupt_record(self, topic: str, partition: int, broker: int, offset: int, how: str = "value") -> None:
        """Broker ``broker``'s replica of the partition serves, from now on, another (valid)
        value at ``offset`` (``how="value"``: its batch CRC differs from the other replicas', a
        diverged replica), or the batch holding ``offset`` damaged as a bad disk would
        (``"bytes"``: bytes flipped in the records section, stored CRC unchanged; ``"header"``:
        the batch length garbled) — for ``kafka-runbook verify-replicas``."""
        self._broker(broker)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidInput(f"offset {offset!r} must be an int ≥ 0")
        from kafka_sim.wire.records import CORRUPTIONS      # here: kafka-python loads only when records are served

        if how not in CORRUPTIONS:
            raise InvalidInput(f"corruption {how!r} is not one of {', '.join(CORRUPTIONS)}")
        tp = TopicPartition(topic, partition)
        eng = self._engine

        def apply() -> None:
            pd = eng.model.parts.get(tp)
            if pd is None or broker not in pd.replicas:
                raise InvalidInput(f"broker {broker} holds no replica of {topic}-{partition}")
            eng.wire.corrupt_record(tp, broker, offset, how)
        eng.call(apply)

    def slow_broker(self, broker_id: int, rate: float | None) -> None:
        """Set the broker's network rate (bytes/s in and out); None restores the spec's."""
        self._broker(broker_id)
        if rate is not None and not rate > 0:
            raise InvalidInput(f"rate {rate!r} for broker {broker_id} must be > 0 bytes/s (or None)")
        self._engine.call(lambda: self._engine.model.set_network_rate(broker_id, rate))
