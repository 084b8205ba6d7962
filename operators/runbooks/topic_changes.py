"""The steps of the topic_changes runbook: diff a topic spec against the cluster, approve, apply, verify.

* **TopicDiffOperator** parses the spec (:mod:`procedures.plan.topic_spec`, refused with line and fix),
  reads the live cluster and writes ``topic_diff.json`` / ``topic_diff.md``
  (:mod:`procedures.plan.topic_diff`); refusals stop the run before any write.
* **TopicChangesApprovalOperator** — the diff, approved by another person in time
  (:mod:`operators.approval.change`); skipped when the diff writes nothing.
* **ApplyTopicChangesOperator** recomputes the diff on the live cluster (any difference from the
  approved one is refused as stale), then applies it through the write gate with the same
  functions as the command line (:mod:`kafka_zk.admin.topics`, :mod:`kafka_zk.admin.configs`):
  create (config node, then topic node; Kafka's rack-aware assignment), grow (Kafka's
  assignment for new partitions), config overrides (with the change notification brokers read),
  deletion markers. ``applied.json`` records each change.
* **VerifyTopicChangesOperator** waits, bounded, for the brokers' view: every created or added
  partition has a leader, the configs read back as the spec says, deleted topics are gone.
* **TopicChangesReportOperator** writes ``final_report.md``.

Failure: :class:`~procedures.plan.topic_spec.TopicSpecError`, :class:`~kafka_zk.errors.InvalidInput`
(refusals), :class:`~kafka_zk.errors.StalePlan`, :class:`TopicChangesNotVisible`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Sequence

from kafka_zk.admin.configs import alter_config, describe_config
from kafka_zk.admin.topics import add_partitions, create_topic, delete_topic
from kafka_zk.audit import utc_now_iso
from kafka_zk.authority import WriteAuthority
from kafka_zk.errors import InvalidInput, KafkaZkError, StalePlan
from kafka_zk.snapshot import read_snapshot
from operators.base import RunbookOperator
from operators.approval.change import ChangeApprovalOperator, require_change_approval
from procedures.run_folder import RunFolder
from operators.reports.outcome import Facts, OutcomeReportOperator
from operators.runtime import change_approval
from procedures.plan.topic_diff import topic_diff
from procedures.plan.topic_spec import TopicSpec, parse_topic_spec

DIFF = "topic_diff.json"
SPEC = "topic_spec.yaml"


class TopicChangesNotVisible(KafkaZkError):
    """The applied changes did not show up in the brokers' view within the wait."""


def spec_text(spec: Any, spec_file: Any) -> tuple[str, str]:
    """(text, where it came from): exactly one of the ``spec`` and ``spec_file`` Params."""
    has_text = isinstance(spec, str) and spec.strip() != ""
    has_file = isinstance(spec_file, str) and spec_file.strip() not in ("", "None")
    if has_text == has_file:
        raise InvalidInput("give exactly one of spec (the YAML text) and spec_file (a path to it)")
    if has_text:
        return spec, "spec"
    try:
        return Path(spec_file).read_text(encoding="utf-8"), spec_file
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidInput(f"spec_file={spec_file}: cannot read it ({e}); fix the path") from None


class TopicDiffOperator(RunbookOperator):
    """Parse the spec and write its diff against the live cluster."""

    template_fields: Sequence[str] = (*RunbookOperator.template_fields, "spec", "spec_file")

    def __init__(self, *, spec: Any = "", spec_file: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.spec_file = spec_file

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        text, where = spec_text(self.spec, self.spec_file)
        topics = parse_topic_spec(text, where)
        folder.write_text(folder.root / SPEC, text)
        with self.session(context) as (client, _writer):
            diff = topic_diff(topics, read_snapshot(client, topics=[t.name for t in topics], with_configs=True))
        folder.write_json(folder.root / DIFF, diff.to_json())
        folder.write_text(folder.root / "topic_diff.md", f"# Topic changes: diff against the cluster\n\n{diff.text()}\n")
        self.log.info("topic diff:\n%s", diff.text())
        return {"writes_nothing": diff.writes_nothing, "text": diff.text()}


class TopicChangesApprovalOperator(ChangeApprovalOperator):
    """The diff, approved (skipped when it writes nothing)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("subject", "Topic changes: approve the diff")
        super().__init__(name="topic_changes", document=DIFF, **kwargs)

    def wanted(self, doc: dict) -> bool:
        return not doc["writes_nothing"]

    def writes_text(self, doc: dict, folder) -> str:
        return ((folder.root / "topic_diff.md").read_text(encoding="utf-8")
                + "\n\n**This approval allows exactly these writes**, each audited: the topic and config nodes "
                  "of the topics created, the topic node of the topics grown, the config overrides listed (with "
                  "their change notifications), the deletion markers listed.")


def _spec(folder) -> tuple[TopicSpec, ...]:
    return parse_topic_spec((folder.root / SPEC).read_text(encoding="utf-8"), str(folder.root / SPEC))


class ApplyTopicChangesOperator(RunbookOperator):
    """Apply the approved diff, if the cluster still gives the same diff."""

    def write_authority(self, folder) -> WriteAuthority:
        return change_approval(folder, "topic_changes", DIFF)

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        approved = json.loads((folder.root / DIFF).read_text(encoding="utf-8"))
        if approved["writes_nothing"]:
            self.log.info("nothing to change: the cluster already matches the spec")
            return {"applied": 0}
        if not self.is_dry_run:
            require_change_approval(folder, "topic_changes", DIFF)
        topics = _spec(folder)
        applied = []
        with self.session(context) as (client, writer):
            now = topic_diff(topics, read_snapshot(client, topics=[t.name for t in topics], with_configs=True))
            if now.to_json() != approved:
                raise StalePlan("the cluster changed since the diff was approved (the diff is now different); run "
                                "again for a fresh diff and approval")
            for c in approved["create"]:
                create_topic(writer, None, c["topic"], c["partitions"], c["replication_factor"], c["configs"])
                applied.append({"create": c["topic"]})
            for g in approved["grow"]:
                add_partitions(writer, g["topic"], g["to"])
                applied.append({"grow": g["topic"], "to": g["to"]})
            for c in approved["configs"]:
                alter_config(writer, "topics", c["topic"], add=c["set"])
                applied.append({"configs": c["topic"], "set": c["set"]})
            for name in approved["delete"]:
                delete_topic(writer, None, name)
                applied.append({"delete": name})
        folder.write_json(folder.root / "applied.json", {"at": utc_now_iso(), "dry_run": self.is_dry_run,
                                                         "changes": applied})
        return {"applied": len(applied)}


class VerifyTopicChangesOperator(RunbookOperator):
    """Bounded wait until the brokers' view shows every applied change."""

    template_fields: Sequence[str] = (*RunbookOperator.template_fields, "timeout_s")

    def __init__(self, *, timeout_s: Any = 300, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.timeout_s = timeout_s

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        diff = json.loads((folder.root / DIFF).read_text(encoding="utf-8"))
        if self.is_dry_run or diff["writes_nothing"]:
            return {"verified": "nothing applied"}
        want_count = {c["topic"]: c["partitions"] for c in diff["create"]}
        want_count.update({g["topic"]: g["to"] for g in diff["grow"]})
        want_configs = {c["topic"]: c["configs"] for c in diff["create"] if c["configs"]}
        want_configs.update({c["topic"]: c["set"] for c in diff["configs"]})
        deadline = time.monotonic() + float(self.timeout_s)
        with self.session(context) as (client, _writer):
            while True:
                missing = self._missing(client, want_count, want_configs, diff["delete"])
                if not missing:
                    folder.write_json(folder.root / "verify.json", {"ok": True, "at": utc_now_iso()})
                    return {"verified": True}
                if time.monotonic() >= deadline:
                    folder.write_json(folder.root / "verify.json", {"ok": False, "missing": missing})
                    raise TopicChangesNotVisible(f"after {self.timeout_s}s the brokers' view still lacks: "
                                                 + "; ".join(missing[:10]))
                time.sleep(0.5)

    @staticmethod
    def _missing(client, want_count: dict, want_configs: dict, deleted: list) -> list[str]:
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


class TopicChangesReportOperator(OutcomeReportOperator):
    """The topic changes' part of the outcome contract: the diff, what was applied and verified."""

    def facts(self, context: Any, folder: RunFolder) -> Facts:
        diff_md = folder.root / "topic_diff.md"
        applied = folder.read_json(folder.root / "applied.json")
        verify = folder.read_json(folder.root / "verify.json")
        diff = diff_md.read_text(encoding="utf-8") if diff_md.exists() else ""
        lines = [diff.replace("# ", "## ", 1) or "No diff was made (the diff step did not finish).", "", "## Applied"]
        lines.append(f"- applied: {len(applied['changes'])} change(s){' (dry run: planned only)' if applied['dry_run'] else ''}"
                     if applied else "- applied: nothing")
        if verify:
            lines.append("- verified in the brokers' view" if verify.get("ok") else f"- NOT verified: {verify.get('missing')}")
        return Facts(what="Topic changes", approvals=("approval_topic_changes.json",), details_md="\n".join(lines),
                     plan_md=diff,
                     summary=(f"{len(applied['changes'])} change(s) applied" if applied and not applied["dry_run"]
                              else "no change applied"),
                     cause="" if not verify or verify.get("ok") else f"not verified in the brokers' view: "
                                                                     f"{verify.get('missing')}")
