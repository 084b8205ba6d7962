"""The emulator's public API: :class:`EmulatedCluster` (and :class:`ClusterSpec`).

Runs N simulated brokers and their controller against a real ZooKeeper (see
:mod:`kafka_sim.engine`); seeds topics as ``kafka-topics --create`` would; exposes sizes, the
simulated clock and faults on demand (kill/restart/controlled shutdown of a broker, expire its
session, move the controller, stall a replica, slow a broker).

Failure: bad arguments raise :class:`kafka_zk.errors.InvalidInput` (nothing written); an
unreachable ZooKeeper raises :class:`kafka_zk.errors.ZkUnavailable`; a start that does not
reach "controller elected" in time raises :class:`EmulatorError`.

Secured clusters: ``credentials`` (:class:`kafka_zk.zk_auth.ZkCredentials`, the broker
principal's SASL login) authenticate every session (brokers, controller, tool); with
``credentials.set_acl`` every node is created with Kafka 2.4's ACLs, as brokers run with
``zookeeper.set.acl=true`` do. A refused login raises :class:`kafka_zk.errors.ZkAuthFailed`.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator, Mapping, Sequence

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from kafka_sim import log_dirs, zk_io
from kafka_sim.as_found import Restored, restore_states
from kafka_sim.engine import Engine, SimEvent
from kafka_sim.faults import EmulatorError, FaultsMixin
from kafka_sim.phases import Phase
from kafka_sim.spec import ClusterSpec
from kafka_sim.wait import wait_until
from kafka_zk import paths
from kafka_zk.codecs import EntityConfig, TopicAssignment, TopicPartition, decode_controller
from kafka_zk.connect import close, connect, parse_connect_string
from kafka_zk.errors import InvalidInput, TopicExists
from kafka_zk.zk_auth import NO_AUTH, ZkCredentials

__all__ = ["EmulatedCluster", "ClusterSpec", "EmulatorError", "SimEvent"]


class EmulatedCluster(FaultsMixin):
    """Brokers ``spec.brokers`` and their controller on ``connect_string`` ("host:port/chroot").

    Faults (kill/shutdown/restart a broker, expire its session, move the controller, stall a
    replica, slow a broker) come from :class:`kafka_sim.faults.FaultsMixin`.
    """

    def __init__(self, connect_string: str, spec: ClusterSpec, session_timeout: float = 10.0,
                 credentials: ZkCredentials = NO_AUTH) -> None:
        self.connect_string = str(parse_connect_string(connect_string))
        self.spec = spec
        self.credentials = credentials
        self._engine = Engine(self.connect_string, spec, session_timeout, credentials)
        self._tool: KazooClient | None = None
        self._started = False
        self._stopped = False
        self._published: tuple | None = None
        self._publisher: threading.Thread | None = None
        self._publisher_stop = threading.Event()

    # ------------------------------------------------------------------ lifecycle
    def start(self, timeout: float = 60.0, connect_timeout: float = 30.0) -> "EmulatedCluster":
        """Brokers register, a controller is elected and has loaded the cluster. ``connect_timeout``:
        how long the first sessions may take: 30 s, for a loaded host (CI's first sessions timed out at 10 s
        when EmbeddedZooKeeper.start returned at ``ruok``, before its server served sessions)."""
        if self._started:
            return self
        cs = parse_connect_string(self.connect_string)
        if cs.chroot:
            root = connect(cs.hosts_text, timeout=connect_timeout, credentials=self.credentials)
            try:
                zk_io.ensure_path(root, cs.chroot)
            finally:
                close(root)
        self._tool = connect(self.connect_string, timeout=connect_timeout, credentials=self.credentials)
        self._engine.start()
        self._started = True
        eng = self._engine

        def boot() -> None:
            for b in eng.brokers.values():
                b.start()
                eng.model.broker_up(b.id)
            eng.load_all_topic_configs(self._tool)
            eng.check_controller()
        eng.call(boot, timeout=timeout)
        if not self.wait_until(lambda: eng.controller is not None, timeout):
            raise EmulatorError(f"no controller elected within {timeout:g}s on {self.connect_string}")
        if self.spec.log_dirs_every_s is not None:
            self.publish_log_dirs(force=True)
            self._publisher = threading.Thread(target=self._publish_loop, name="kafka-sim-log-dirs", daemon=True)
            self._publisher.start()
        return self

    def _publish_loop(self) -> None:
        """Republish the log-dirs sizes every ``spec.log_dirs_every_s`` wall seconds until stop()."""
        while not self._publisher_stop.wait(self.spec.log_dirs_every_s):
            try:
                self.publish_log_dirs(force=True)   # also when nothing changed: ``at`` says the sizes are fresh
            except Exception:  # noqa: BLE001 - a stopping cluster or a ZooKeeper blip: try at the next tick
                if self._stopped:
                    return

    def stop(self) -> None:
        """Close every session; idempotent."""
        if self._stopped:
            return
        self._stopped = True
        self._publisher_stop.set()
        if self._publisher is not None:
            self._publisher.join(timeout=30)
        if self._started:
            eng = self._engine
            eng.stopping = True
            try:
                eng.call(lambda: [b.close() for b in eng.brokers.values()], timeout=30)
            except Exception:  # noqa: BLE001 - closing anyway
                for b in eng.brokers.values():
                    b.close()
            eng.stop()
            eng.wire.close_all()
        if self._tool is not None:
            close(self._tool)
            self._tool = None

    def __enter__(self) -> "EmulatedCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ topics and sizes
    def create_topic(self, name: str, assignment: Mapping[int, Sequence[int]],
                     sizes: Mapping[int, int] | None = None, config: Mapping[str, str] | None = None,
                     timeout: float = 60.0) -> None:
        """Seed one topic as ``kafka-topics --create`` does; wait until its states exist."""
        self.create_topics({name: (assignment, sizes, config)}, timeout)

    def create_topics(self, topics: Mapping[str, tuple[Mapping[int, Sequence[int]],
                                                       Mapping[int, int] | None,
                                                       Mapping[str, str] | None]],
                      timeout: float = 120.0, contiguous: bool = True) -> None:
        """Seed many topics at once (pipelined writes); wait until their states exist.
        ``contiguous=False`` accepts partition ids with gaps (a rehearsal's reduced seed: the
        partitions its plan touches, kafka_sim/from_snapshot.py)."""
        self._require_started()
        rows, seeds = [], {}
        probes = [(name, self._tool.exists_async(paths.topic(name))) for name in sorted(topics)]
        taken = [name for name, probe in probes if probe.get(timeout=30) is not None]
        for name, (assignment, sizes, config) in sorted(topics.items()):
            a = _check_assignment(name, assignment, contiguous)
            for p, n in (sizes or {}).items():
                if p not in a or not isinstance(n, int) or n < 0:
                    raise InvalidInput(f"topic {name!r}: size for partition {p!r} must be an int ≥ 0 "
                                       "for a partition of the assignment")
                seeds[TopicPartition(name, p)] = float(n)
            if name in taken:
                raise TopicExists(f"Topic '{name}' already exists.")
            cfg = EntityConfig({str(k): str(v) for k, v in (config or {}).items()}).encode()
            rows.append((name, cfg, TopicAssignment(a).encode(1)))
        eng = self._engine
        eng.call(lambda: eng.pending_sizes.update(seeds))
        zk_io.seed_topics(self._tool, rows, eng.journal)
        names = [r[0] for r in rows]

        def ready() -> bool:
            ctrl = eng.controller
            if ctrl is None:
                return False
            for n in names:
                if n not in ctrl.topics:
                    return False
                for tp in ctrl.tps(n):
                    if tp not in ctrl.states and set(ctrl.replicas(tp)) & set(ctrl.live):
                        return False
            return True
        if not self.wait_until(lambda: eng.call(ready), timeout):
            raise EmulatorError(f"controller did not create the partitions of {names[:3]}... "
                                f"within {timeout:g}s")

    def restore_states(self, states: Mapping[TopicPartition, tuple[int, Sequence[int]]],
                       timeout: float = 600.0) -> "Restored":
        """Have the controller write each partition's leader and ISR as given (a copy seeded from a
        snapshot: the cluster as it was found, kafka_sim/as_found.py); returns what it wrote."""
        self._require_started()
        eng = self._engine
        # a controller that was on a broker just stopped (a seeded copy's down broker) moves first, and
        # the controller's live brokers are the registered ones: a broker just stopped is not taken for live
        # (its partitions' snapshot leaders are then skipped, not written as "unchanged"; CI 2026-12-02)
        def ready() -> bool:
            ctrl = eng.controller
            return ctrl is not None and ctrl.loaded and \
                ctrl.live_set() == {b for b, broker in eng.brokers.items() if broker.registered}
        if not self.wait_until(lambda: eng.call(ready), timeout):
            raise EmulatorError(f"no controller loaded the cluster and saw its live brokers within {timeout:g}s "
                                "to write the partitions' states")

        def restore() -> Restored:
            if eng.controller is None:
                raise EmulatorError("the controller moved while the partitions' states were written: seed again")
            return restore_states(eng.controller, states)
        return eng.call(restore, timeout=timeout)

    def topic_names(self) -> list[str]:
        """Topics in ``/brokers/topics`` now."""
        self._require_started()
        return sorted(self._tool.get_children(paths.BROKER_TOPICS))

    @property
    def tool_client(self) -> KazooClient:
        """The emulator's own session for tool-like writes (seeding, control channel)."""
        self._require_started()
        return self._tool

    def set_partition_size(self, topic: str, partition: int, nbytes: int) -> None:
        if not isinstance(nbytes, int) or nbytes < 0:
            raise InvalidInput(f"size {nbytes!r} of {topic}-{partition} must be an int ≥ 0 bytes")
        tp = TopicPartition(topic, partition)
        eng = self._engine

        def apply() -> None:
            if tp in eng.model.parts:
                eng.model.set_size(tp, nbytes)
            else:
                eng.pending_sizes[tp] = float(nbytes)
        eng.call(apply)

    def broker_list(self) -> str:
        """The live brokers' listeners as ``--broker-list`` takes them (``127.0.0.1:PORT,...``)."""
        self._require_started()
        return ",".join(f"127.0.0.1:{p}" for _, p in sorted(self._engine.wire.ports().items()))

    def broker_port(self, broker_id: int) -> int:
        """The port broker ``broker_id`` listens on (0 while it is down)."""
        self._broker(broker_id)
        return self._engine.wire.port(broker_id)

    def sizes(self) -> dict[TopicPartition, int]:
        eng = self._engine
        return eng.call(lambda: {tp: int(eng.model.size(tp)) for tp in sorted(eng.model.parts)})

    def disk_usage(self, timeout: float = 120.0) -> dict[int, int]:
        """Bytes on every broker's disk now (every replica it hosts; followers: what they copied),
        read on the engine thread once it has handled what is queued before (at most ``timeout``
        wall seconds, else ``TimeoutError``)."""
        eng = self._engine

        def usage() -> dict[int, int]:
            # model.replica_bytes for every replica, inlined (a rehearsal samples every poll): a
            # follower's copied bytes, else the partition's size, taken once per partition
            model = eng.model
            held, size = model.plan.held, model.size
            used: dict[int, float] = {b: 0.0 for b in eng.brokers}
            for tp, pd in model.parts.items():
                have, whole = pd.have, None
                for b in pd.replicas:
                    if b in have:
                        got = held(tp, pd, b)
                    else:
                        if whole is None:
                            whole = size(tp)
                        got = whole
                    used[b] = used.get(b, 0.0) + got
            return {b: int(v) for b, v in sorted(used.items())}
        return eng.call(usage, timeout=timeout)

    def set_disk_capacity(self, broker: int, nbytes: int | None) -> None:
        """Give ``broker`` a disk of ``nbytes`` (None: unlimited); a full disk stops its fetchers."""
        if nbytes is not None and (not isinstance(nbytes, int) or nbytes <= 0):
            raise InvalidInput(f"disk capacity {nbytes!r} of broker {broker} must be an int > 0 bytes (or None)")
        eng = self._engine
        eng.call(lambda: eng.model.set_disk_capacity(broker, nbytes))

    def log_dirs_json(self) -> str:
        eng = self._engine
        return eng.call(lambda: log_dirs.render(
            eng.model, [b for b, br in eng.brokers.items() if br.alive], self.spec.log_dir))

    def publish_log_dirs(self, force: bool = False) -> bool:
        """Write the log-dirs JSON under /kafka-sim/log-dirs for other processes, when sizes
        may have changed since the last publication (or ``force``); True when written."""
        eng = self._engine

        def snapshot() -> tuple[bool, str | None]:
            key = (eng.model.version, tuple(sorted(b for b, br in eng.brokers.items() if br.alive)))
            changed = force or key != self._published or bool(eng.model.flows()) or eng.model.produce_rate > 0
            self._published = key
            text = log_dirs.render(eng.model, list(key[1]), self.spec.log_dir) if changed else None
            return changed, text
        changed, text = eng.call(snapshot)
        if changed:
            log_dirs.publish(self._tool, text, self.now())
        return changed

    # ------------------------------------------------------------------ time and waiting
    def now(self) -> float:
        """Simulated seconds since start."""
        return self._engine.clock.now()

    @contextmanager
    def clock_held(self) -> Iterator[None]:
        """Simulated time stands still inside (a rehearsal's tool work costs no simulated time)."""
        clock = self._engine.clock
        clock.hold()
        try:
            yield
        finally:
            clock.release()

    @contextmanager
    def clock_runs_until(self, sim_at: float, wake_on: frozenset[str] = frozenset()) -> Iterator[None]:
        """Inside :meth:`clock_held` (however nested): let simulated time run while the tool sleeps, to ``sim_at`` at
        most (it wakes at exactly that simulated time, however late the host runs it). The engine
        first hears every write made so far (:meth:`settle`): a controller hears a tool's write
        within milliseconds, not the simulated minutes a slow watch delivery would otherwise cost.
        ``wake_on``: history kinds (``reassign_node_deleted``: a reassignment's last move done) at
        which the clock stops before ``sim_at``; :meth:`woken` then says so (a rehearsal sees a wave
        end when it ends, not at its next poll)."""
        self.settle()
        eng = self._engine
        clock = eng.clock
        eng.woken, eng.wake_on = False, frozenset(wake_on)
        clock.limit(sim_at)
        holds = clock.suspend_holds()
        eng.post(("wake",))                 # the engine waits again knowing the limit (wait_for_clock)
        try:
            yield
        finally:
            clock.restore_holds(holds)
            eng.wake_on = frozenset()
            clock.limit(None)

    def wait_for_clock(self, sim_at: float, timeout: float, woken: bool = False) -> bool:
        """Inside :meth:`clock_runs_until` (``sim_at`` its own): block until simulated time has reached
        ``sim_at`` (or, with ``woken``, the clock stopped at a ``wake_on`` event), at most ``timeout``
        wall seconds; whether it got there. The engine tells the waiter when it does (it wakes at the
        limit), so a sleeping tool waits here instead of polling the clock in slices."""
        eng = self._engine
        with eng.tool_wake:
            return eng.tool_wake.wait_for(lambda: eng.clock.now() >= sim_at or (woken and eng.woken), timeout)

    def woken(self) -> bool:
        """Whether the current :meth:`clock_runs_until` stopped at one of its ``wake_on`` events."""
        return self._engine.woken

    def settle(self) -> None:
        """Return once every watch that writes made so far fired is queued on the engine (it handles
        them before simulated time next runs; kafka_sim.engine.Engine.settle_own_watches)."""
        self._engine.call(self._engine.settle_own_watches)

    def skip_time(self, seconds: float) -> None:
        """Jump ``seconds`` of simulated time (a rehearsal waiting for a window; see clock.py)."""
        self._engine.call(lambda: self._engine.clock.skip(seconds))

    def wait_until(self, predicate: Callable[[], bool], timeout: float) -> bool:
        return wait_until(predicate, timeout)

    def wait_idle(self, timeout: float, quiet: float = 0.25) -> bool:
        """No reassignment, election or deletion pending, nothing copying or about to start
        copying (a live broker's replica before its first fetch), no event queued —
        continuously for ``quiet`` wall seconds (a ZooKeeper notification of a write made just
        before the call may still be on its way)."""
        eng = self._engine

        def idle() -> bool:
            ctrl = eng.controller
            if ctrl is None or not eng.idle():
                return False
            if any(r.phase is not Phase.ABANDONED for r in ctrl.reassigning.values()):
                return False
            if ctrl.to_delete or eng.pending_joins or eng.model.flows():
                return False
            if any(b in eng.model.live for _, b in eng.model.starts):   # a first fetch still to come (a
                return False                                           # restarted broker's rejoin)
            return ctrl.zk.exists(paths.PREFERRED_REPLICA_ELECTION) is None
        since: list[float] = []

        def settled() -> bool:
            if not eng.call(idle):
                since.clear()
                return False
            if not since:
                since.append(time.monotonic())
            return time.monotonic() - since[0] >= quiet
        return self.wait_until(settled, timeout)

    def history(self) -> list[SimEvent]:
        """What happened, with simulated times (catch-ups, ISR joins, reassignments...)."""
        return self._engine.history_items()

    def journal(self) -> list[zk_io.Write]:
        """Every emulator write, in commit order (only with ``spec.journal``)."""
        return self._engine.journal.items()

    def controller_id(self) -> int:
        """The active controller's broker id, or −1 when there is none."""
        self._require_started()
        try:
            data, _ = self._tool.get(paths.CONTROLLER)
        except NoNodeError:
            return -1
        return decode_controller(data).broker_id

    # ------------------------------------------------------------------ helpers
    def _broker(self, broker_id: int):
        self._require_started()
        b = self._engine.brokers.get(broker_id)
        if b is None:
            raise InvalidInput(f"broker {broker_id!r} is not in this cluster "
                               f"(brokers: {sorted(self._engine.brokers)})")
        return b

    def _require_started(self) -> None:
        if not self._started or self._stopped:
            raise InvalidInput("the emulated cluster is not running: call start() first "
                               "(or use it as a context manager)")


def _check_assignment(name: str, assignment: Mapping[int, Sequence[int]],
                      contiguous: bool = True) -> dict[int, tuple[int, ...]]:
    if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
        raise InvalidInput(f"topic name {name!r} is not valid: use letters, digits, '.', '_', '-'")
    if not assignment:
        raise InvalidInput(f"topic {name!r}: the assignment is empty; give {{partition: [brokers]}}")
    out = {}
    for p, replicas in assignment.items():
        rs = tuple(replicas)
        if not rs or len(set(rs)) != len(rs) or any(not isinstance(r, int) or r < 0 for r in rs):
            raise InvalidInput(f"topic {name!r} partition {p}: replicas {list(rs)} must be distinct "
                               "broker ids ≥ 0, at least one")
        out[int(p)] = rs
    if any(p < 0 for p in out) or (contiguous and sorted(out) != list(range(len(out)))):
        raise InvalidInput(f"topic {name!r}: partition ids {sorted(out)} must be 0..{len(out) - 1}")
    return out
