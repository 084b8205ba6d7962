"""The plan steps of the topic-scoped runbooks (subclasses of SparkPlanOperator).

* :class:`ChangeReplicationFactorPlanOperator` (``--op change-rf``): ``topics`` must exist; the new
  ``replication_factor`` must be between 1 and the registered brokers; lowering is refused for a
  topic whose ``min.insync.replicas`` (its override, else the cluster default in
  ``/config/brokers/<default>``, else Kafka's 1) would exceed the new RF — producers with
  ``acks=all`` would be refused on every write.
* :class:`MoveTopicsPlanOperator` (``--op move-topics``): ``topics`` must exist and
  ``brokers`` (the destination set) must be registered and at least as many as the widest
  partition's replicas.
* :class:`ReassignPartitionsPlanOperator` (``--op reassign-json``): ``reassignment_json`` is a
  user's reassignment JSON in Kafka's format, verbatim; it is checked with Kafka's own rules
  against the run's snapshot (unknown topics, partitions or brokers, duplicate replicas or
  partitions, a topic being deleted, ``log_dirs`` other than ``any`` — which Kafka 2.4 refuses on
  the ZooKeeper path) and saved in the run folder for the plan job; RF changes are allowed and
  listed (``rf_changes`` in the step's result and the report's notes).

Each checks everything against the snapshot before Spark starts, and a plan copied with
``plan_from`` must have been made for the same Params.

Failure: :class:`InvalidInput` / :class:`BrokerNotAvailable` naming the Param and the fix; nothing
has been written to ZooKeeper.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Sequence

from kafka_zk.admin.reassignment import targets_from_file_entries, validate_targets
from kafka_zk.codecs import decode_reassignment_file
from kafka_zk.errors import BrokerNotAvailable, InvalidInput, InvalidPayload
from kafka_zk.model import ClusterSnapshot
from planning.plan_folder.read import load_plan_artifacts
from kafka_zk.retiring import refuse_named
from procedures.run_folder import RunFolder
from formats.snapshot_file import load_snapshot
from kafka_zk.validation import check_brokers_to_remove, check_topics_exist, parse_topic_names
from procedures.plan.retiring import check_plan_avoids_retiring, run_retiring
from operators.plan.step import SparkPlanOperator, read_plan_summary

#: Kafka's default min.insync.replicas when neither the topic nor the cluster default sets it
KAFKA_DEFAULT_MIN_ISR = 1
USER_JSON = "reassignment.json"


def check_topics(value: Any, param: str = "topics") -> list[str]:
    """``topics`` as sorted topic names (:func:`kafka_zk.validation.parse_topic_names`; at least one)."""
    return sorted(parse_topic_names(value, param, required=True))


def _snapshot(folder: RunFolder) -> ClusterSnapshot | None:
    return load_snapshot(str(folder.snapshot)) if folder.snapshot.is_file() else None


def min_insync_replicas(snap: ClusterSnapshot, topic: str) -> int:
    """The topic's effective ``min.insync.replicas``: its override, the cluster default, else 1."""
    for config in ((snap.topics[topic].config or {}), (snap.broker_configs.get("<default>") or {})):
        value = config.get("min.insync.replicas")
        if value not in (None, ""):
            try:
                return int(value)
            except (TypeError, ValueError):
                continue
    return KAFKA_DEFAULT_MIN_ISR


def _param_list(summary: dict, key: str) -> str:
    return str((summary.get("params") or {}).get(key) or "")


class ChangeReplicationFactorPlanOperator(SparkPlanOperator):
    """Plan raising or lowering the RF of ``topics`` (see module docstring)."""

    operation = "change-rf"
    template_fields: Sequence[str] = (*SparkPlanOperator.template_fields, "topics", "replication_factor")

    def __init__(self, *, topics: Any, replication_factor: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.topics = topics
        self.replication_factor = replication_factor

    def _rf(self) -> int:
        try:
            rf = int(self.replication_factor)
        except (TypeError, ValueError):
            raise InvalidInput(f"replication_factor={self.replication_factor!r}: give a whole number, e.g. 3") from None
        if rf < 1 or rf > 32767:
            raise InvalidInput(f"replication_factor={rf}: give a number from 1 to the number of live brokers")
        return rf

    def check_inputs(self, folder: RunFolder) -> dict:
        topics, rf = check_topics(self.topics), self._rf()
        snap = _snapshot(folder)
        if snap is None:
            return {"topics": topics, "replication_factor": rf}
        check_topics_exist(topics, snap.topics, "topics")
        live = len(snap.brokers)
        if rf > live:
            raise InvalidInput(f"replication_factor={rf} is more than the {live} registered brokers: a partition "
                               f"cannot have two replicas on one broker; give at most {live} or add brokers first")
        too_strict = []
        changes = {}
        for t in topics:
            current = sorted({len(p.replicas) for p in snap.partitions() if p.tp.topic == t})
            changes[t] = current
            min_isr = min_insync_replicas(snap, t)
            if rf < max(current) and min_isr > rf:
                too_strict.append(f"{t} (min.insync.replicas={min_isr})")
        if too_strict:
            raise InvalidInput(f"replication_factor={rf} is below min.insync.replicas of {', '.join(too_strict)}: "
                               "producers with acks=all could never write again. Lower min.insync.replicas of "
                               f"those topics to at most {rf} first (kafka-configs --alter), or keep a higher RF")
        return {"topics": topics, "replication_factor": rf, "current_rf": changes}

    def job_args(self) -> list[str]:
        return ["--topics=" + ",".join(check_topics(self.topics)), "--replication-factor", str(self._rf())]

    def check_plan_matches(self, plan_dir: Path, origin: str) -> None:
        summary = read_plan_summary(plan_dir, origin, self.operation)
        got = (_param_list(summary, "topics"), _param_list(summary, "replication_factor"))
        want = (",".join(check_topics(self.topics)), str(self._rf()))
        if got != want:
            raise InvalidInput(f"{origin}: that plan sets RF {got[1]} on {got[0]!r}, this run asks RF {want[1]} on "
                               f"{want[0]!r} (topics, replication_factor); give the same Params, or leave plan_from "
                               "empty to plan now")


class MoveTopicsPlanOperator(SparkPlanOperator):
    """Plan moving ``topics`` onto the broker set ``brokers`` (see module docstring)."""

    operation = "move-topics"
    template_fields: Sequence[str] = (*SparkPlanOperator.template_fields, "topics", "brokers")

    def __init__(self, *, topics: Any, brokers: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.topics = topics
        self.brokers = brokers

    def _brokers(self) -> list[int]:
        return check_brokers_to_remove(self.brokers, "brokers")

    def check_inputs(self, folder: RunFolder) -> dict:
        topics, brokers = check_topics(self.topics), self._brokers()
        refuse_named(brokers, run_retiring(folder), "brokers")
        snap = _snapshot(folder)
        if snap is None:
            return {"topics": topics, "brokers": brokers}
        check_topics_exist(topics, snap.topics, "topics")
        gone = [b for b in brokers if b not in snap.brokers]
        if gone:
            raise BrokerNotAvailable(f"brokers={brokers}: broker(s) {gone} are not registered under /brokers/ids "
                                     f"(registered: {sorted(snap.brokers)}); start them first or leave them out")
        widest = max((len(p.replicas) for p in snap.partitions() if p.tp.topic in set(topics)), default=0)
        if widest > len(brokers):
            raise InvalidInput(f"brokers={brokers}: {len(brokers)} broker(s) cannot hold partitions with {widest} "
                               "replicas (two replicas never share a broker); name more brokers")
        return {"topics": topics, "brokers": brokers}

    def job_args(self) -> list[str]:
        return ["--topics=" + ",".join(check_topics(self.topics)), "--brokers", ",".join(map(str, self._brokers()))]

    def check_plan_matches(self, plan_dir: Path, origin: str) -> None:
        summary = read_plan_summary(plan_dir, origin, self.operation)
        got_topics = _param_list(summary, "topics")
        want_topics = ",".join(check_topics(self.topics))
        if got_topics and got_topics != want_topics:
            raise InvalidInput(f"{origin}: that plan moves {got_topics!r}, this run's topics are {want_topics!r}; "
                               "give the same topics, or leave plan_from empty to plan now")


class ReassignPartitionsPlanOperator(SparkPlanOperator):
    """Check a user's reassignment JSON against the cluster and plan it into waves (see module docstring)."""

    operation = "reassign-json"
    template_fields: Sequence[str] = (*SparkPlanOperator.template_fields, "reassignment_json")

    def __init__(self, *, reassignment_json: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.reassignment_json = reassignment_json
        self._user_file: Path | None = None

    def _text(self) -> str:
        value = self.reassignment_json
        if isinstance(value, (dict, list)):
            return json.dumps(value)
        if not isinstance(value, str) or not value.strip():
            raise InvalidInput("reassignment_json is empty: paste the JSON kafka-reassign-partitions takes, e.g. "
                               '{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[1,2,3]}]}')
        return value

    def _targets(self):
        try:
            entries = decode_reassignment_file(self._text())
            return targets_from_file_entries(entries)
        except (InvalidPayload, InvalidInput) as e:
            raise InvalidInput(f"reassignment_json: {e}") from None

    def check_inputs(self, folder: RunFolder) -> dict:
        targets = self._targets()
        # before the plan job, which reads a snapshot without the retiring brokers and would call
        # them non-existent: name them as retiring, and how to release one
        check_plan_avoids_retiring(folder, targets)
        snap = _snapshot(folder)
        rf_changes: list[str] = []
        if snap is not None:
            try:
                validate_targets(snap, targets)
            except (InvalidInput, BrokerNotAvailable) as e:
                raise type(e)(f"reassignment_json: {e}; fix the JSON (nothing was written)") from None
            rf_changes = [f"{tp}: {len(snap.partition(tp).replicas)} -> {len(r)} replicas"
                          for tp, r in sorted(targets.items()) if len(snap.partition(tp).replicas) != len(r)]
        folder.root.mkdir(parents=True, exist_ok=True)
        self._user_file = folder.root / USER_JSON
        self._user_file.write_text(self._text(), encoding="utf-8")
        return {"partitions": len(targets), "rf_changes": rf_changes, "json_sha256": self._digest()}

    def _digest(self) -> str:
        canonical = json.dumps({f"{tp.topic}-{tp.partition}": list(r) for tp, r in sorted(self._targets().items())},
                               sort_keys=True)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def job_args(self) -> list[str]:
        if self._user_file is None:
            raise InvalidInput("reassignment_json was not checked before the plan job (internal order)")
        return ["--reassignment-json-file", str(self._user_file)]

    def check_plan_matches(self, plan_dir: Path, origin: str) -> None:
        summary = read_plan_summary(plan_dir, origin, self.operation)

        planned = {tp: tuple(r) for tp, r in load_plan_artifacts(str(plan_dir)).target.items()}
        wanted = {tp: tuple(r) for tp, r in self._targets().items()}
        changed = {tp: r for tp, r in wanted.items() if planned.get(tp, r) != r}
        if summary and (changed or not set(planned) <= set(wanted)):
            raise InvalidInput(f"{origin}: that plan's targets differ from this run's reassignment_json "
                               f"({len(changed)} partition(s) differ); give the same JSON, or leave plan_from empty "
                               "to plan now")
