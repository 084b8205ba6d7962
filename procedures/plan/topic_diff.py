"""What a topic spec changes on the live cluster (pure): :func:`topic_diff`.

For each topic of the spec, against the snapshot:

* absent and not ``delete`` → **create** (partitions and replication factor required; Kafka's
  own rack-aware assignment at apply time; the spec's configs);
* present: more ``partitions`` → **grow** (Kafka's assignment for the new partitions); fewer →
  refused (Kafka cannot shrink a topic); another ``replication_factor`` → **handed over** to the
  change_replication_factor runbook (listed with the conf to trigger it; nothing written here);
  ``configs`` whose value differs → **config change** (only the keys the spec names);
* ``delete: true`` → **delete** when present, refused for what delete_topics refuses (internal
  topics, a topic being reassigned — the same kernel decides), nothing when already absent.

The diff is a JSON document (``to_json``) whose sha256 the approval pins: the apply step
recomputes it on the live cluster and refuses any difference (stale).

Failure: :class:`InvalidInput` listing every refusal at once; nothing has been written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from kafka_zk.errors import InvalidInput
from kafka_zk.model import ClusterSnapshot
from planning.topic_deletion import select_topics
from procedures.plan.declarative import SpecDiff
from procedures.plan.topic_spec import TopicSpec


@dataclass
class TopicDiff(SpecDiff):
    """The changes a spec makes (see module docstring)."""

    create: list[dict] = field(default_factory=list)
    grow: list[dict] = field(default_factory=list)
    configs: list[dict] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    rf_handoff: list[dict] = field(default_factory=list)

    @property
    def writes_nothing(self) -> bool:
        return not (self.create or self.grow or self.configs or self.delete)

    def text(self) -> str:
        lines = []
        lines += [f"- create **{c['topic']}**: {c['partitions']} partitions, RF {c['replication_factor']}"
                  + (f", configs {c['configs']}" if c["configs"] else "") for c in self.create]
        lines += [f"- grow **{g['topic']}**: {g['from']} → {g['to']} partitions" for g in self.grow]
        lines += [f"- configs of **{c['topic']}**: " + ", ".join(f"{k}: {c['before'].get(k, '(default)')} → {v}"
                                                                for k, v in sorted(c["set"].items()))
                  for c in self.configs]
        lines += [f"- delete **{t}** (through /admin/delete_topics, as delete_topics does)" for t in self.delete]
        lines += [f"- replication factor of **{h['topic']}** {h['from']} → {h['to']}: not done here; trigger "
                  f"change_replication_factor with {h['conf']}" for h in self.rf_handoff]
        return "\n".join(lines) if lines else "Nothing to change: the cluster already matches the spec."


def topic_diff(spec: Sequence[TopicSpec], snap: ClusterSnapshot) -> TopicDiff:
    """The diff of ``spec`` against ``snap`` (see module docstring)."""
    diff, refusals = TopicDiff(), []
    live = len(snap.brokers)
    deleting = [t.name for t in spec if t.delete and t.name in snap.topics]
    if deleting:
        selection = select_topics(snap, deleting)
        refusals += [f"delete {name}: {why}" for name, why in selection.refused.items()]
    for t in spec:
        present = t.name in snap.topics
        if t.delete:
            if present:
                diff.delete.append(t.name)
            continue
        if not present:
            if t.partitions is None or t.replication_factor is None:
                refusals.append(f"{t.name} does not exist: give partitions and replication_factor to create it")
                continue
            if t.replication_factor > live:
                refusals.append(f"{t.name}: replication_factor {t.replication_factor} is more than the {live} "
                                "registered brokers")
                continue
            if t.name in snap.delete_markers:
                refusals.append(f"{t.name} is still being deleted: wait until it is gone")
                continue
            diff.create.append({"topic": t.name, "partitions": t.partitions,
                                "replication_factor": t.replication_factor, "configs": dict(sorted(t.configs.items()))})
            continue
        topic = snap.topics[t.name]
        count = len(topic.partitions)
        rfs = sorted({len(p.replicas) for p in topic.partitions.values()})
        if t.partitions is not None and t.partitions < count:
            refusals.append(f"{t.name} has {count} partitions; the spec says {t.partitions}, but Kafka cannot "
                            "remove partitions: raise the spec to at least that")
        elif t.partitions is not None and t.partitions > count:
            diff.grow.append({"topic": t.name, "from": count, "to": t.partitions})
        if t.replication_factor is not None and rfs != [t.replication_factor]:
            diff.rf_handoff.append({"topic": t.name, "from": rfs[-1] if rfs else None, "to": t.replication_factor,
                                    "conf": {"topics": [t.name], "replication_factor": t.replication_factor}})
        changed = {k: v for k, v in t.configs.items() if topic.config.get(k) != v}
        if changed:
            diff.configs.append({"topic": t.name, "set": dict(sorted(changed.items())),
                                 "before": {k: topic.config[k] for k in sorted(changed) if k in topic.config}})
    if refusals:
        raise InvalidInput(f"the topic spec cannot be applied ({len(refusals)} problem(s)), nothing was written: "
                           + "; ".join(refusals))
    return diff
