"""The steps of the topic_changes runbook: diff a topic spec against the cluster, approve, apply, verify.

The shared steps of a declarative runbook (:mod:`operators.runbooks.declarative`), filled with:

* **TopicDiffOperator** — the spec (:mod:`procedures.plan.topic_spec`, refused with line and fix) and
  its diff against the live cluster, ``topic_diff.json`` / ``topic_diff.md``
  (:mod:`procedures.plan.topic_diff`); refusals stop the run before any write.
* **TopicChangesApprovalOperator** — the diff, approved by another person in time; skipped when
  the diff writes nothing.
* **ApplyTopicChangesOperator** recomputes the diff on the live cluster (any difference from the
  approved one is refused as stale; what an earlier try of the step already wrote is not written
  again), then applies the rest through the write gate with the same
  functions as the command line (:mod:`kafka_zk.admin.topics`, :mod:`kafka_zk.admin.configs`):
  create (config node, then topic node; Kafka's rack-aware assignment), grow (Kafka's
  assignment for new partitions), config overrides (with the change notification brokers read),
  deletion markers. ``applied.json`` records each change.
* **VerifyTopicChangesOperator** waits, bounded, for the brokers' view: every created or added
  partition has a leader, the configs read back as the spec says, deleted topics are gone.
* **TopicChangesReportOperator** writes ``final_report.md``.

Failure: :class:`~procedures.plan.topic_spec.TopicSpecError`, :class:`~kafka_zk.errors.InvalidInput`
(refusals), :class:`~kafka_zk.errors.StalePlan`,
:class:`~operators.runbooks.declarative.ChangesNotVisible`.
"""

from __future__ import annotations

from typing import Any

from kafka_zk.admin.configs import alter_config, describe_config
from kafka_zk.admin.topics import add_partitions, create_topic, delete_topic
from kafka_zk.snapshot import read_snapshot
from operators.runbooks.declarative import (SpecApplyOperator, SpecApprovalOperator,
                                            SpecDiffOperator, SpecReportOperator, SpecVerifyOperator)
from procedures.plan.declarative import still_to_write
from procedures.plan.topic_diff import topic_diff
from procedures.plan.topic_spec import parse_topic_spec


class _TopicFiles:
    NAME = "topic_changes"
    SPEC = "topic_spec.yaml"
    DIFF = "topic_diff.json"
    DIFF_MD = "topic_diff.md"
    TITLE = "Topic changes: diff against the cluster"

    def parse(self, text: str, where: str) -> Any:
        return parse_topic_spec(text, where)


def _live(client: Any, topics: Any) -> Any:
    return topic_diff(topics, read_snapshot(client, topics=[t.name for t in topics], with_configs=True))


class TopicDiffOperator(_TopicFiles, SpecDiffOperator):
    """Parse the spec and write its diff against the live cluster."""

    def diff(self, client: Any, spec: Any) -> Any:
        return _live(client, spec)


class TopicChangesApprovalOperator(_TopicFiles, SpecApprovalOperator):
    """The diff, approved (skipped when it writes nothing)."""

    SUBJECT = "Topic changes: approve the diff"
    ALLOWS = ("the topic and config nodes of the topics created, the topic node of the topics grown, the config "
              "overrides listed (with their change notifications), the deletion markers listed.")


class ApplyTopicChangesOperator(_TopicFiles, SpecApplyOperator):
    """Apply the approved diff, if the cluster still gives the same diff."""

    def apply(self, client: Any, writer: Any, spec: Any, approved: dict) -> list[dict]:
        resume = still_to_write(_live(client, spec).to_json(), approved, CHANGE_KEYS)
        applied = [{**_record(kind, e), "found_applied": True} for kind in CHANGE_KEYS for e in resume.found[kind]]
        todo = resume.todo
        for c in todo["create"]:
            create_topic(writer, None, c["topic"], c["partitions"], c["replication_factor"], c["configs"])
            applied.append(_record("create", c))
        for g in todo["grow"]:
            add_partitions(writer, g["topic"], g["to"])
            applied.append(_record("grow", g))
        for c in todo["configs"]:
            alter_config(writer, "topics", c["topic"], add=c["set"])
            applied.append(_record("configs", c))
        for name in todo["delete"]:
            delete_topic(writer, None, name)
            applied.append(_record("delete", name))
        return applied


#: The topic diff's lists of writes (the others describe, and write nothing).
CHANGE_KEYS = ("create", "grow", "configs", "delete")


def _record(kind: str, entry: Any) -> dict:
    """One line of ``applied.json`` for a change of ``kind``."""
    if kind == "create":
        return {"create": entry["topic"]}
    if kind == "grow":
        return {"grow": entry["topic"], "to": entry["to"]}
    if kind == "configs":
        return {"configs": entry["topic"], "set": entry["set"]}
    return {"delete": entry}


class VerifyTopicChangesOperator(_TopicFiles, SpecVerifyOperator):
    """Bounded wait until the brokers' view shows every applied change."""

    def missing(self, client: Any, diff: dict) -> list[str]:
        want_count = {c["topic"]: c["partitions"] for c in diff["create"]}
        want_count.update({g["topic"]: g["to"] for g in diff["grow"]})
        want_configs = {c["topic"]: c["configs"] for c in diff["create"] if c["configs"]}
        want_configs.update({c["topic"]: c["set"] for c in diff["configs"]})
        deleted = diff["delete"]
        snap = read_snapshot(client, topics=sorted(set(want_count) | set(want_configs) | set(deleted)),
                             with_configs=False)
        out = []
        for name, count in want_count.items():
            t = snap.topics.get(name)
            if t is None or len(t.partitions) != count:
                out.append(f"{name}: {0 if t is None else len(t.partitions)} of {count} partitions")
                continue
            leaderless = [p for p, part in t.partitions.items() if part.leader is None or part.leader < 0]
            if leaderless:
                out.append(f"{name}: partitions {leaderless[:5]} have no leader yet")
        for name, cfg in want_configs.items():
            live = describe_config(client, "topics", name)
            wrong = {k: v for k, v in cfg.items() if live.get(k) != v}
            if wrong:
                out.append(f"{name}: configs {sorted(wrong)} not yet as the spec says")
        out += [f"{name} not deleted yet" for name in deleted if name in snap.topics]
        return out


class TopicChangesReportOperator(_TopicFiles, SpecReportOperator):
    """The topic changes' part of the outcome contract: the diff, what was applied and verified."""

    WHAT = "Topic changes"


STEPS = (TopicDiffOperator, TopicChangesApprovalOperator, ApplyTopicChangesOperator, VerifyTopicChangesOperator,
         TopicChangesReportOperator)
