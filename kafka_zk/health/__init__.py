"""Cluster health: pure checks over a :class:`ClusterSnapshot` plus the ages of a few znodes.

What is checked (one check name each, :data:`CHECKS`):

* ``unavailable``, ``under_replicated``, ``under_min_isr``, ``at_min_isr`` — the partition
  predicates of ``kafka-topics --describe`` (docs/zookeeper.md §6.1, :mod:`kafka_zk.describe`), with
  ``min.insync.replicas`` known as on the API path: the topic override, else the ``<default>``
  broker config, else :attr:`HealthThresholds.default_min_isr`. Under-replicated uses the 2.6+
  rule (RF excludes adding replicas), so a running reassignment is not reported as lost
  replicas; a partition under min ISR is not also listed as at min ISR. Topics marked for deletion are left
  out (their partitions go leaderless on purpose; a stuck deletion is its own check).
* ``leader_imbalance`` — per broker B, among partitions whose preferred replica is B (topics
  being deleted excluded), the fraction whose state names another leader, against
  ``leader.imbalance.per.broker.percentage`` exactly as the auto-rebalancer computes it (§2.8).
* ``leaked_throttle`` — throttle rates on ``/config/brokers/*`` or throttled-replica lists on
  topics when no reassignment is running (a topic list is also leaked while one runs if none
  of the topic's partitions is moving), unless a live runbook run recorded them as its own
  (:mod:`kafka_zk.health.owners`: a run folder with ``throttles.json`` and no
  ``throttles_removed.json``): those are listed as owned by that run, not as leaks.
* ``stuck_reassignment`` — ``/admin/reassign_partitions`` unchanged for longer than the
  threshold (or, for API-driven 2.4+ reassignments, a topic znode with adding/removing lists),
  with every partition not progressing and its likely cause.
* ``stuck_election`` — ``/admin/preferred_replica_election`` older than the threshold (the
  controller deletes it after one pass, so an old one means no controller is processing it).
* ``stuck_deletion`` — ``/admin/delete_topics/<t>`` older than the threshold, with the cause.

Layout: :mod:`kafka_zk.health.model` (thresholds, findings, leader balance, the report),
:mod:`kafka_zk.health.checks` (the checks), :mod:`kafka_zk.health.ages` (the Stat reads).
Only :func:`read_znode_ages` touches ZooKeeper (pipelined ``exists`` for the Stat of each
node); everything else is a pure function, so tests build snapshots from literals too. Ages
compare the ZooKeeper server's ``ctime``/``mtime`` with the local clock: with clock skew between
the two, thresholds shift by that skew.

Failure: a threshold that makes no sense (negative, percentage over 100, unknown severity)
raises :class:`InvalidInput` naming the field; ZooKeeper errors in :func:`read_znode_ages` are
translated as in :mod:`kafka_zk.snapshot`.
"""

from kafka_zk.health.ages import read_znode_ages
from kafka_zk.health.checks import check_health
from kafka_zk.health.owners import RunThrottles, ThrottleOwners, find_throttle_owners
from kafka_zk.health.model import (AT_MIN_ISR, CHECKS, DEFAULT_SEVERITY, LEADER_IMBALANCE, LEAKED_THROTTLE,
                                   SEVERITIES, STUCK_DELETION, STUCK_ELECTION, STUCK_REASSIGNMENT, UNAVAILABLE,
                                   UNDER_MIN_ISR, UNDER_REPLICATED, BrokerLeaderBalance, Finding, HealthReport,
                                   HealthThresholds, OwnedThrottle, ZnodeAge, ZnodeAges, leader_balance, min_isr_of,
                                   severity_rank, throttle_keys_of_broker, throttle_keys_of_topic)

__all__ = ["AT_MIN_ISR", "CHECKS", "DEFAULT_SEVERITY", "LEADER_IMBALANCE", "LEAKED_THROTTLE", "SEVERITIES",
           "STUCK_DELETION", "STUCK_ELECTION", "STUCK_REASSIGNMENT", "UNAVAILABLE", "UNDER_MIN_ISR",
           "UNDER_REPLICATED", "BrokerLeaderBalance", "Finding", "HealthReport", "HealthThresholds", "ZnodeAge",
           "ZnodeAges", "OwnedThrottle", "RunThrottles", "ThrottleOwners", "find_throttle_owners", "check_health",
           "leader_balance", "min_isr_of", "read_znode_ages", "severity_rank",
           "throttle_keys_of_broker", "throttle_keys_of_topic"]
