"""Verification steps: the cluster matches the plan, and the removed brokers are drained.

**FinalVerifyOperator**: every planned partition has exactly its target replica list, nothing
adding/removing, and its whole target in the ISR (a full ISR), and no reassignment is left. When
the only gap is registered followers catching up into the ISR (a broker restarted after its
moves finished), it waits for them, bounded by ``isr_wait_s``, before judging.
**VerifyDrainedOperator**: no partition of the whole cluster has a replica on, or is led by, a
removed broker. Both write their findings to ``verify.json`` in the run folder; in a dry run they
only record that nothing was verified (nothing was changed).

Failure: :class:`VerificationFailed` / :class:`DrainIncomplete`, listing the first partitions
that fail and how many there are in all.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

from kafka_zk.codecs import TopicPartition
from kafka_zk.model import ClusterSnapshot
from kafka_zk.snapshot import read_snapshot
from operators.base import DecommissionStep, RunbookOperator
from operators.errors import DrainIncomplete, VerificationFailed
from operators.waves import partition_done
from spark_jobs.artifacts import load_plan_artifacts

SHOWN = 10


def plan_mismatches(snap: ClusterSnapshot, target: dict[TopicPartition, tuple[int, ...]]) -> list[str]:
    out = []
    for tp in sorted(target):
        if not snap.has_partition(tp):
            out.append(f"{tp}: does not exist")
            continue
        p = snap.partition(tp)
        if not partition_done(p, target[tp]):
            out.append(f"{tp}: replicas {list(p.replicas)} isr {list(p.isr)} (planned {list(target[tp])})")
    return out


def only_catching_up(snap: ClusterSnapshot, target: dict[TopicPartition, tuple[int, ...]]) -> list[str]:
    """Partitions whose only gap is a registered target follower not yet in the ISR (the
    replicas equal the plan, nothing reassigning, no reassignment node); empty when any other
    mismatch exists — those are not waited on."""
    out = []
    if snap.reassignment is not None:
        return []
    for tp in sorted(target):
        if not snap.has_partition(tp):
            return []
        p = snap.partition(tp)
        if partition_done(p, target[tp]):
            continue
        lagging = [b for b in target[tp] if b not in p.isr]
        if tuple(p.replicas) != tuple(target[tp]) or p.is_reassigning or any(b not in snap.brokers for b in lagging):
            return []
        out.append(str(tp))
    return out


def drain_problems(snap: ClusterSnapshot, removed: frozenset[int]) -> list[str]:
    out = []
    for p in snap.partitions():
        on = sorted(set(p.replicas) & removed)
        if on:
            out.append(f"{p.tp}: replica on {on}")
        if p.leader in removed:
            out.append(f"{p.tp}: led by {p.leader}")
    return out


def _summary(problems: list[str]) -> str:
    more = f" (and {len(problems) - SHOWN} more)" if len(problems) > SHOWN else ""
    return "; ".join(problems[:SHOWN]) + more


class _VerifyStep(RunbookOperator):
    def _record(self, folder, key: str, value: dict) -> None:
        doc = folder.read_json(folder.verify) or {}
        doc[key] = value
        folder.write_json(folder.verify, doc)


class FinalVerifyOperator(_VerifyStep):
    """Replicas equal the plan and every ISR is full (waiting, bounded by ``isr_wait_s``, while the
    only gap is registered followers catching up into the ISR, e.g. after a broker restart)."""

    template_fields: Sequence[str] = (*_VerifyStep.template_fields, "isr_wait_s", "poll_interval_s")
    ui_color = "#d9ead3"

    def __init__(self, *, isr_wait_s: Any = 600.0, poll_interval_s: Any = 5.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.isr_wait_s = isr_wait_s
        self.poll_interval_s = poll_interval_s

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        if self.is_dry_run:
            self._record(folder, "final_verify", {"ok": None, "note": "dry run: nothing changed, nothing verified"})
            return {"dry_run": True}
        plan = load_plan_artifacts(str(folder.plan_dir))
        target = dict(plan.target)
        deadline = time.monotonic() + float(self.isr_wait_s)
        with self.session(context) as (client, _writer):
            while True:
                snap = read_snapshot(client, with_configs=False)
                catching_up = only_catching_up(snap, target)
                if not catching_up or time.monotonic() >= deadline:
                    break
                self.log.info("%d partition(s) have their planned replicas but a follower is still catching up "
                              "into the ISR (%s): waiting up to %.0fs more", len(catching_up),
                              ", ".join(catching_up[:5]), deadline - time.monotonic())
                time.sleep(min(float(self.poll_interval_s), max(0.0, deadline - time.monotonic())))
        problems = plan_mismatches(snap, target)
        if snap.reassignment is not None:
            problems.append(f"/admin/reassign_partitions still exists ({len(snap.reassignment.entries)} entries)")
        self._record(folder, "final_verify", {"ok": not problems, "partitions": len(plan.target),
                                              "problems": problems})
        if problems:
            raise VerificationFailed(f"{len(problems)} partition(s) do not match the plan: {_summary(problems)}")
        self.log.info("all %d planned partitions have their target replicas and a full ISR", len(plan.target))
        return {"partitions": len(plan.target)}


class VerifyDrainedOperator(_VerifyStep, DecommissionStep):
    """No replica and no leadership left on the removed brokers."""

    template_fields: Sequence[str] = DecommissionStep.template_fields

    ui_color = "#d9ead3"

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        removed = self.removed
        if self.is_dry_run:
            self._record(folder, "verify_drained", {"ok": None, "note": "dry run: nothing changed, nothing verified"})
            return {"dry_run": True}
        with self.session(context) as (client, _writer):
            snap = read_snapshot(client, with_configs=False)
        problems = drain_problems(snap, removed)
        self._record(folder, "verify_drained", {"ok": not problems, "removed": sorted(removed), "problems": problems})
        if problems:
            raise DrainIncomplete(f"brokers {sorted(removed)} are not drained: {_summary(problems)}")
        self.log.info("brokers %s host no replica and lead no partition: safe to shut down", sorted(removed))
        return {"removed": sorted(removed)}
