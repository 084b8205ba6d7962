"""One simulated broker: its own ZooKeeper session, registration, config view, ISR duties.

* Start: own kazoo session; startup persistent paths (null data), ``/cluster/id`` and a
  producer-id block (docs/zookeeper.md §0, §1.14, §1.15); the
  ephemeral ``/brokers/ids/<id>`` v4 registration on 127.0.0.1 written as ``[create null,
  setData]`` (zkVersion 1); its own dynamic config read; watches on ``/controller`` (to take
  part in elections) and on ``/config/changes`` children (§2.10; listener in
  config_notifications.py: expired notifications are purged by every broker).
* Kill = close the session (the controller sees the node vanish). An expired session (the
  process keeps running) re-registers with a new session as soon as kazoo reconnects.
* As a leader (IBP < 2.7): adds a caught-up follower at the end of the ISR (no epoch bump,
  the controller epoch it learned), drops a follower that lagged ``replica.lag.time.max.ms``,
  and batches the changed partitions into ``/isr_change_notification`` (2.5 s checks, flushed
  after 5 s without change or 60 s since the last flush).

Every write goes through :mod:`kafka_sim.zk_io`. Watch callbacks only post events to the
engine; all work runs on the engine thread.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.retry import KazooRetry

from kafka_sim import config_notifications, zk_io
from kafka_sim.zk_handler import EmulatorHandler
from kafka_sim.spec import (ISR_NOTIFICATION_CHECK,
                            ISR_NOTIFICATION_MAX_DELAY, ISR_NOTIFICATION_QUIET)
from kafka_zk import acls, paths
from kafka_zk.codecs import (BrokerRegistration, ClusterId, InvalidPayload, IsrChangeNotification,
                             PartitionState, TopicPartition, decode_config_change, decode_entity_config,
                             decode_partition_state)
from kafka_zk.connect import retry_policy
from kafka_zk.errors import KafkaZkError

if TYPE_CHECKING:
    from kafka_sim.engine import Engine

log = logging.getLogger(__name__)
RATE_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")


def parse_rate(value: str | None) -> float | None:
    """A throttle rate in bytes/s; missing or unparsable ⇒ unlimited (None)."""
    if value is None:
        return None
    try:
        rate = float(int(value.strip()))
    except ValueError:
        return None
    return rate if rate >= 0 else None


class BrokerIdTaken(KafkaZkError):
    """Another session already holds ``/brokers/ids/<id>``."""


class SimBroker:
    """Broker ``broker_id`` in rack ``rack`` (None: no ``broker.rack``)."""

    def __init__(self, engine: "Engine", broker_id: int, rack: str | None) -> None:
        self.engine = engine
        self.id = broker_id
        self.rack = rack
        self.client: KazooClient | None = None
        self.alive = False
        self.registered = False
        self.suspended = False             # the connection was lost; the session may answer again
        self.stopping = False              # SIGTERM received: a controlled shutdown under way (faults.py)
        self.incarnation = 0
        self.last_config_seq = -1
        self.isr_pending: set[TopicPartition] = set()
        self.last_isr_change = 0.0
        self.last_isr_flush = 0.0
        self.flush_scheduled = False
        self.name = f"broker {broker_id}"

    # ------------------------------------------------------------------ lifecycle
    def registration(self) -> bytes:
        port = self.engine.wire.port(self.id)
        return BrokerRegistration(
            host="127.0.0.1", port=port, endpoints=(f"PLAINTEXT://127.0.0.1:{port}",), rack=self.rack,
            jmx_port=-1, timestamp=str(int(time.time() * 1000)),
            listener_security_protocol_map={"PLAINTEXT": "PLAINTEXT"}, version=4).encode()

    def start(self) -> None:
        """Open a session, create startup paths, register, read own config, arm watches."""
        self.incarnation += 1
        self.stopping = False
        inc = self.incarnation
        client = KazooClient(hosts=self.engine.connect, timeout=self.engine.session_timeout, handler=EmulatorHandler(),
                             connection_retry=KazooRetry(max_tries=-1, delay=0.05, max_delay=1.0),
                             command_retry=retry_policy(), **self.engine.credentials.kazoo_kwargs())
        if self.engine.credentials.set_acl:
            acls.mark_secure(client)
        client.add_listener(lambda state: self.engine.post(("broker", self, "session", (inc, state))))
        client.start(timeout=15)
        self.client = client
        journal = self.engine.journal
        zk_io.ensure_startup_paths(client, journal, self.name)
        zk_io.ensure_cluster_id(client, ClusterId(self.engine.cluster_id).encode(), journal, self.name)
        zk_io.claim_producer_id_block(client, self.id, journal, self.name)
        self.alive = True
        self.engine.wire.open(self.id)      # before registering: the registration carries its port
        try:
            self.register()
        except KafkaZkError:
            self.close()
            raise
        self.load_own_config()

    def register(self) -> None:
        try:
            zk_io.register_broker(self.client, self.id, self.registration(), self.engine.journal, self.name)
        except NodeExistsError:
            raise BrokerIdTaken(
                f"broker id {self.id} is already registered under {paths.broker(self.id)} on "
                f"{self.engine.connect} (another emulator or a Kafka broker on this chroot?): stop it, "
                "wait for its session to expire, or use another chroot") from None
        self.registered = True
        self.arm_watches()
        # a new session processes the notifications (the config was just read fresh, so only
        # the numbering is taken) and purges the expired ones, as Kafka's listener does
        now = config_notifications.wall_now()
        names = config_notifications.notification_names(self.client.get_children(paths.CONFIG_CHANGES))
        self.last_config_seq = max((paths.sequence_of(k) for k in names), default=-1)
        self.purge_config_changes(now, names)

    def arm_watches(self) -> None:
        inc = self.incarnation
        self.client.exists(paths.CONTROLLER,
                           watch=lambda e: self.engine.post(("broker", self, "controller", inc)))
        self.client.get_children(paths.CONFIG_CHANGES,
                                 watch=lambda e: self.engine.post(("broker", self, "config", inc)))

    def close(self) -> None:
        """Close the session (a SIGKILL as ZooKeeper sees it, without the timeout wait)."""
        self.alive = False
        self.registered = False
        self.engine.wire.close(self.id)
        client, self.client = self.client, None
        self.isr_pending.clear()
        if client is not None:
            try:
                client.stop()
            finally:
                client.close()

    def on_session(self, inc: int, state: str) -> None:
        if inc != self.incarnation or not self.alive or self.client is None:
            return
        if state == KazooState.SUSPENDED:
            self.suspended = True
        elif state == KazooState.LOST:
            self.registered = False
            self.suspended = False
            self.engine.history("session_expired", None, self.id)
            # our controller (if any) stays until check_controller sees /controller gone or held by
            # another: this event may be handled after a new session already won the election
        elif state == KazooState.CONNECTED and not self.registered:
            self.suspended = False
            self.register()
            self.engine.history("broker_reregistered", None, self.id)
            self.engine.check_controller()
        elif state == KazooState.CONNECTED and self.suspended:
            self.suspended = False
            self.on_reconnected(inc)

    def on_reconnected(self, inc: int) -> None:
        """The same session answers again (a blip, a ZooKeeper server restart within the session
        timeout). kazoo dropped our watches; the Java client a broker uses sets them again and
        fires those whose nodes changed meanwhile: set ours again, read the notifications missed,
        see whether ``/controller`` is still there, and let our controller catch up."""
        self.engine.history("broker_reconnected", None, self.id)
        ctrl = self.engine.controller
        if ctrl is not None and ctrl.id == self.id and not ctrl.loaded:
            self.engine.redo_failover(ctrl)            # its failover was cut short: all of it again
        elif ctrl is not None and ctrl.id == self.id:  # first: nothing else may keep it from catching up
            found = ctrl.resync()
            self.engine.history("controller_resync", None, self.id,
                                detail="admin nodes found: " + (", ".join(found) or "none"))
        self.arm_watches()
        self.on_config_changes(inc)
        self.engine.check_controller()

    # ------------------------------------------------------------------ config (§2.10)
    def load_own_config(self) -> None:
        try:
            data, _ = self.client.get(paths.broker_config(self.id))
            cfg = decode_entity_config(data).config
        except (NoNodeError, InvalidPayload):
            cfg = {}
        rates = (parse_rate(cfg.get(RATE_KEYS[0])), parse_rate(cfg.get(RATE_KEYS[1])))
        self.engine.model.set_throttle_rates(self.id, *rates)
        self.engine.history("throttle_rates", None, self.id, detail=f"leader={rates[0]} follower={rates[1]}")

    def on_config_changes(self, inc: int) -> None:
        if inc != self.incarnation or not self.registered:
            return
        client = self.client
        now = config_notifications.wall_now()
        kids = client.get_children(paths.CONFIG_CHANGES,
                                   watch=lambda e: self.engine.post(("broker", self, "config", inc)))
        names = config_notifications.notification_names(kids)
        self.last_config_seq = config_notifications.process(client, names, self.last_config_seq,
                                                            self._on_notification, self.engine.notification_reads)
        self.purge_config_changes(now, names)

    def purge_config_changes(self, now: float, names: list[str]) -> None:
        """Delete every notification older than the expiry, processed or not (racing the others)."""
        config_notifications.purge_obsolete(self.client, names, now, self.engine.spec.config_notification_max_age,
                                            self.engine.journal, self.name, self.engine.notification_reads)

    def _on_notification(self, path: str, data: bytes | None, seq: int) -> None:
        try:
            change = decode_config_change(data)
        except InvalidPayload:
            return
        self.apply(change.entity_type, change.entity_name, seq)

    def apply(self, entity_type: str, entity_name: str, seq: int) -> None:
        if entity_type == "topics":
            self.engine.apply_topic_config(entity_name, seq, self.client)
        elif entity_type == "brokers" and entity_name == str(self.id):
            self.load_own_config()
        # brokers/<default>: throttle rates there are ignored before 3.9 (§2.10)

    # ------------------------------------------------------------------ leader duties (§2.6)
    def change_isr(self, tp: TopicPartition, add: int | None = None, drop: int | None = None) -> bool:
        """Rewrite the ISR of a partition this broker leads (conditional on zkVersion)."""
        if not self.registered or self.client is None:
            return False
        path = paths.partition_state(*tp)
        reads = self.engine.reads                # this event's copy, if it read or wrote the node
        known = reads.get(path)
        if known is not None:
            data, zk_version = known
        else:
            try:
                data, stat = self.client.get(path)
            except NoNodeError:
                return False
            zk_version = stat.version
            reads.put(path, data, zk_version)
        st = decode_partition_state(data)
        if st.leader != self.id:
            return False
        if add is not None:
            if add in st.isr:
                return True
            isr = st.isr + (add,)
        else:
            if drop not in st.isr or st.isr == (drop,):
                return True
            isr = tuple(i for i in st.isr if i != drop)
        epoch = self.engine.controller_epoch if self.engine.controller_epoch is not None else st.controller_epoch
        new = PartitionState(st.leader, st.leader_epoch, isr, epoch)
        payload = new.encode()
        version = zk_io.leader_isr_write(self.client, path, payload, zk_version, self.engine.journal, self.name)
        if version is None:
            reads.drop(path)
            return False
        reads.put(path, payload, version)
        self.engine.model.set_view(tp, isr=isr)
        self.record_isr_change(tp)
        return True

    def record_isr_change(self, tp: TopicPartition) -> None:
        now = self.engine.now()
        self.isr_pending.add(tp)
        self.last_isr_change = now
        if not self.flush_scheduled:
            self.flush_scheduled = True
            self.engine.at(now + ISR_NOTIFICATION_CHECK, self.maybe_flush_isr_changes)

    def maybe_flush_isr_changes(self) -> None:
        self.flush_scheduled = False
        if not self.isr_pending or not self.registered:
            return
        now = self.engine.now()
        if now - self.last_isr_change >= ISR_NOTIFICATION_QUIET - 1e-9 or \
                now - self.last_isr_flush >= ISR_NOTIFICATION_MAX_DELAY:
            tps = tuple(sorted(self.isr_pending))
            self.isr_pending.clear()
            self.last_isr_flush = now
            zk_io.create_sequential(self.client, paths.ISR_CHANGE_PREFIX,
                                    IsrChangeNotification(tps).encode(), self.engine.journal, self.name)
        else:
            self.flush_scheduled = True
            self.engine.at(now + ISR_NOTIFICATION_CHECK, self.maybe_flush_isr_changes)
