"""Read, apply and read back a broker config spec: the broker_configs runbook without Airflow.

* :func:`plan_changes` — the live overrides of the spec's entities and the registered brokers,
  then :func:`~procedures.broker_configs.diff.broker_config_diff`;
* :func:`apply_changes` — recompute the diff (any difference from the approved one is stale,
  nothing written; the entities an earlier try of the same apply already wrote are not written
  again), then per entity still to write, in the diff's order, ONE read-modify-write of
  ``/config/brokers/<entity>`` and ONE change notification, as Kafka 2.4's
  ``AdminZkClient.changeBrokerConfig`` does: :func:`kafka_zk.admin.configs.alter_config` (the
  ``kafka-runbook configs`` writer) through the session's write gate, which audits, honours a dry
  run and refuses what the run's approval does not cover;
* :func:`unverified` — what the read-back of each changed entity does not show yet.

Failure: :class:`~kafka_zk.errors.InvalidInput` (refusals), :class:`~kafka_zk.errors.StalePlan`,
the write gate's refusals; a write that fails stops at that entity (the ones before it stay written
and are listed by the caller's record).
"""

from __future__ import annotations

from typing import Sequence

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from kafka_zk import paths
from kafka_zk.admin.configs import alter_config, describe_config
from kafka_zk.broker_configs import where
from kafka_zk.writer import ZkWriter
from procedures.broker_configs.diff import BrokerConfigDiff, broker_config_diff
from procedures.broker_configs.spec import EntitySpec
from procedures.plan.declarative import still_to_write


def registered_brokers(client: KazooClient) -> list[int]:
    """The broker ids registered in ``/brokers/ids``."""
    try:
        return sorted(int(b) for b in client.get_children(paths.BROKER_IDS) if b.isdigit())
    except NoNodeError:
        return []


def plan_changes(client: KazooClient, spec: Sequence[EntitySpec]) -> BrokerConfigDiff:
    """The diff of ``spec`` against the live cluster."""
    live = {e.entity: describe_config(client, "brokers", e.entity) for e in spec}
    return broker_config_diff(spec, live, registered_brokers(client))


def apply_changes(writer: ZkWriter, spec: Sequence[EntitySpec], approved: dict) -> list[dict]:
    """Apply the approved diff if the live cluster still gives it; the changes written, in order."""
    resume = still_to_write(plan_changes(writer.client, spec).to_json(), approved, ("changes",))
    applied = [{"entity": c["entity"], "set": c["set"], "delete": c["delete"], "found_applied": True}
               for c in resume.found["changes"]]
    for c in resume.todo["changes"]:
        after = alter_config(writer, "brokers", c["entity"], add=c["set"], delete=c["delete"], dynamic=True)
        applied.append({"entity": c["entity"], "set": c["set"], "delete": c["delete"], "after": after})
    return applied


def unverified(client: KazooClient, approved: dict) -> list[str]:
    """What the read-back of the approved changes does not show (``[]`` when all of it holds)."""
    out = []
    for c in approved["changes"]:
        live = describe_config(client, "brokers", c["entity"])
        wrong = sorted(k for k, v in c["set"].items() if live.get(k) != v)
        kept = sorted(k for k in c["delete"] if k in live)
        if wrong or kept:
            out.append(f"{where(c['entity'])}: " + ", ".join([*(f"{k} not {c['set'][k]}" for k in wrong),
                                                              *(f"{k} still set" for k in kept)]))
    return out
