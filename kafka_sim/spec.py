"""The emulated cluster's shape and knobs (:class:`ClusterSpec`), checked before anything runs.

Failure: a spec that cannot describe a cluster (no brokers, negative ids, rates or speed ≤ 0)
raises :class:`kafka_zk.errors.InvalidInput` naming the field and the fix.
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from typing import Mapping

from kafka_zk.errors import InvalidInput
from planning.wave_time import FETCH_START_S, REASSIGN_COMPLETION_S, REASSIGN_REACTION_S

#: Kafka's defaults that matter to the emulator (seconds of simulated time).
REPLICA_LAG_TIME_MAX = 10.0          # replica.lag.time.max.ms
ISR_NOTIFICATION_CHECK = 2.5         # ReplicaManager isr-change propagation check
ISR_NOTIFICATION_QUIET = 5.0         # flush when no ISR change for 5 s
ISR_NOTIFICATION_MAX_DELAY = 60.0    # ... or when the last flush is older than 60 s
CONFIG_NOTIFICATION_MAX_AGE = 15 * 60.0  # brokers delete older config_change_ nodes (wall clock)
LEADER_IMBALANCE_CHECK_INTERVAL = 300.0   # leader.imbalance.check.interval.seconds
AUTO_REBALANCE_FIRST_DELAY = 5.0          # first check after a controller takes over
LEADER_IMBALANCE_PER_BROKER_PERCENTAGE = 10.0

#: The fixed cost of a real 2.4.1 reassignment, measured on the recorded trajectories
#: (tests/vectors/real_kafka_2_4_1/, ``zk_writes``: ZooKeeper commit times). Simulated seconds;
#: concurrent moves pay them concurrently (one node's moves pay the reaction once).
#: b-i (tb1-0 [0,1] → [2,3], no data): node created 1.081 → node deleted 2.082, 1.0 s in all.
#: The values live in planning/wave_time.py, where the plan's estimate, the rehearsal and the
#: window guard read them too (one model of a wave's fixed cost).
REASSIGN_REACTION = REASSIGN_REACTION_S   # b-i: node created 1.081 → controller's first multi 1.264
                                          # (others: b-vi 0.24, b-ii 0.007, e-2 0.010)
FETCH_START = FETCH_START_S               # b-i: topic znode with the adding replicas 1.264 → the leader
                                          # adds them to the ISR 1.749 / 1.784 (a tiny partition: fetchers
                                          # start, first fetches; b-vi: 0.31, 0.11)
REASSIGN_COMPLETION = REASSIGN_COMPLETION_S   # b-i: the last ISR expansion 1.784 → phase B's multis
                                              # 1.877–2.027, node deleted 2.082 (b-vi: 0.35, 0.23)
#: A restarted broker's rejoin (tests/vectors/real_kafka_2_4_1/, ``zk_writes``): from its new
#: registration to the leader's ISR expansion, nothing to catch up (the controller's LeaderAndIsr, the
#: log truncated to the leader's epoch, the follower's first fetch, the leader adding it at that fetch):
#: d broker 0 registered 30.203 → ISR td-3 31.793, td-0 31.804, td-1 31.821 (1.59-1.62 s); d broker 2
#: 53.588 → td-2 55.307 (1.72 s); f broker 0 30.955 → tf-1 32.648, tf-0 32.650 (1.69 s). What it
#: missed is copied after that first fetch, at the shared rates.
REJOIN_FETCH = 1.65
#: ClusterSpec keyword arguments of the measured fixed cost (the defaults): ``ClusterSpec(..., **KAFKA_2_4_1_FIXED_COST)``
KAFKA_2_4_1_FIXED_COST = {"reassign_reaction_s": REASSIGN_REACTION, "fetch_start_s": FETCH_START,
                          "reassign_completion_s": REASSIGN_COMPLETION}
#: ... and the ones that turn it off (moves as fast as the copy alone): ``ClusterSpec(..., **NO_FIXED_COST)``
NO_FIXED_COST = {name: 0.0 for name in KAFKA_2_4_1_FIXED_COST}


@dataclass(frozen=True)
class ClusterSpec:
    """What to emulate.

    ``brokers`` maps broker id to rack (``None``: no ``broker.rack``). ``network_rate`` is the
    unthrottled bytes/s each broker can send and receive. ``speed`` is simulated seconds per
    wall second (the clock is paused while the emulator itself works, see clock.py). ``produce_rate`` (bytes/s per partition with a live leader) is optional
    traffic. ``config_notification_max_age`` is the wall-clock age past which brokers purge
    ``/config/changes`` children (Kafka: 15 min; tests shorten it). ``journal`` keeps a list of every emulator ZooKeeper write (tests, debugging).
    ``disk_capacity`` gives brokers a disk (bytes; absent: unlimited): a full disk stops the
    broker's followers from fetching (kafka_sim/replication.py).
    ``log_dirs_every_s`` makes the cluster publish every replica's size under
    ``/kafka-sim/log-dirs`` at that wall-clock rhythm (kafka_sim/log_dirs.py), as a deployment
    that runs ``kafka-log-dirs --describe`` periodically would see them.
    ``state_change_logs`` is a folder where each broker writes ``broker-<id>/state-change.log``
    in Kafka 2.4's format (kafka_sim/state_change_log.py), times from ``log_start`` (UTC epoch
    seconds; default: the wall clock at start) plus simulated seconds.
    ``reassign_reaction_s``, ``fetch_start_s`` and ``reassign_completion_s`` are the per-move
    fixed cost of a 2.4.1 reassignment (simulated seconds; the values measured on the recorded
    trajectories are :data:`REASSIGN_REACTION`, :data:`FETCH_START`, :data:`REASSIGN_COMPLETION`,
    :data:`KAFKA_2_4_1_FIXED_COST` gives all three): the controller's reaction to a new
    ``/admin/reassign_partitions``, a new replica's first fetch after it is created, and the
    controller's completion after the ISR change that makes a move complete. They default to the
    measured values; 0 turns each off (:data:`NO_FIXED_COST`: all three).
    ``rejoin_fetch_s`` is a restarted broker's first fetch after its new registration (simulated
    seconds; default :data:`REJOIN_FETCH`, measured on 2.4.1; 0: at once): its replicas copy what
    they missed from then on and rejoin the ISRs when caught up.
    ``listener_base_port`` fixes the brokers' Kafka listeners: the n-th broker in id order listens
    on ``base + n`` (a port in use is an error); without it each takes a free port.
    ``listeners=False`` opens no listener (a rehearsal's copy, which nobody fetches from): the brokers
    register port 0.
    """

    brokers: Mapping[int, str | None]
    network_rate: float = 100 * 1024 ** 2
    speed: float = 3600.0
    delete_topic_enable: bool = True
    auto_leader_rebalance: bool = False
    unclean_leader_election: bool = False
    seed: int = 0
    produce_rate: float = 0.0
    journal: bool = False
    log_dir: str = "/var/lib/kafka/data"
    state_change_logs: str | None = None   # folder for each broker's state-change.log (None: none)
    log_start: float | None = None         # UTC epoch seconds of simulated time 0 in those logs
    config_notification_max_age: float = CONFIG_NOTIFICATION_MAX_AGE
    disk_capacity: Mapping[int, int] | None = None   # broker -> disk bytes (None: unlimited disks)
    log_dirs_every_s: float | None = None   # wall s between log-dirs publications (None: on demand)
    listener_base_port: int | None = None   # the n-th broker (ids sorted) listens on base + n (None: free ports)
    listeners: bool = True                  # False: no Kafka listener at all (a rehearsal's copy: nobody fetches)
    # the per-move fixed cost of Kafka 2.4.1, on by default (kafka_sim/README.md); 0 turns each off
    reassign_reaction_s: float = REASSIGN_REACTION      # admin node created → controller acts
    fetch_start_s: float = FETCH_START                  # new replica created → it starts fetching
    reassign_completion_s: float = REASSIGN_COMPLETION  # move's ISR complete → controller completes it
    rejoin_fetch_s: float = REJOIN_FETCH                # restarted broker registered → its first fetch

    def __post_init__(self) -> None:
        if not self.brokers:
            raise InvalidInput("ClusterSpec.brokers is empty: give at least one broker, "
                               "e.g. {0: 'a', 1: 'b', 2: 'c'}")
        for bid, rack in self.brokers.items():
            if isinstance(bid, bool) or not isinstance(bid, int) or bid < 0:
                raise InvalidInput(f"ClusterSpec.brokers: broker id {bid!r} must be an int ≥ 0")
            if rack is not None and (not isinstance(rack, str) or not rack):
                raise InvalidInput(f"ClusterSpec.brokers: rack of broker {bid} must be a non-empty "
                                   "string or None")
        if not 0 < self.network_rate < math.inf:
            raise InvalidInput(f"ClusterSpec.network_rate {self.network_rate!r} must be a finite rate > 0 bytes/s "
                               "(a broker's network is never unlimited: give its NIC's rate)")
        if not self.speed > 0:
            raise InvalidInput(f"ClusterSpec.speed {self.speed!r} must be > 0 (simulated s per wall s)")
        if not self.config_notification_max_age > 0:
            raise InvalidInput(f"ClusterSpec.config_notification_max_age {self.config_notification_max_age!r} "
                               "must be > 0 wall seconds (Kafka: 900)")
        for bid, cap in (self.disk_capacity or {}).items():
            if bid not in self.brokers:
                raise InvalidInput(f"ClusterSpec.disk_capacity: broker {bid!r} is not in brokers; "
                                   f"give capacities for {sorted(self.brokers)}")
            if isinstance(cap, bool) or not isinstance(cap, (int, float)) or not cap > 0:
                raise InvalidInput(f"ClusterSpec.disk_capacity: broker {bid} capacity {cap!r} must be > 0 bytes")
        base = self.listener_base_port
        if base is not None and (isinstance(base, bool) or not isinstance(base, int)
                                 or not 1024 <= base <= 65535 - len(self.brokers) + 1):
            raise InvalidInput(f"ClusterSpec.listener_base_port {base!r}: give a port from 1024 to "
                               f"{65536 - len(self.brokers)}, so that the {len(self.brokers)} brokers' ports fit")
        if self.log_dirs_every_s is not None and not (isinstance(self.log_dirs_every_s, (int, float))
                                                      and self.log_dirs_every_s > 0):
            raise InvalidInput(f"ClusterSpec.log_dirs_every_s {self.log_dirs_every_s!r} must be > 0 wall seconds "
                               "(or None: publish only on demand)")
        for name in ("reassign_reaction_s", "fetch_start_s", "reassign_completion_s", "rejoin_fetch_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 3600:
                raise InvalidInput(f"ClusterSpec.{name} {value!r} must be from 0 to 3600 simulated "
                                   "seconds (0: no delay; default: measured on Kafka 2.4.1)")
        if self.produce_rate < 0:
            raise InvalidInput(f"ClusterSpec.produce_rate {self.produce_rate!r} must be ≥ 0 bytes/s")

    @property
    def broker_ids(self) -> tuple[int, ...]:
        return tuple(sorted(self.brokers))
