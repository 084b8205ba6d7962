"""Verification steps: the cluster matches the plan, and the removed brokers are drained.

**FinalVerifyOperator**: every planned partition has exactly its target replica list, nothing
adding/removing, and its whole target in the ISR (a full ISR), and no reassignment is left. When
the only gap is target followers out of the ISR (a broker restarting, or restarted and catching
up, after its moves finished), it waits for them before judging — up to ``restart_wait_s`` for a
broker to register again, ``isr_wait_s`` in all — naming each broker it waits on, in its log,
in ``verify.json`` and in its failure.
**VerifyDrainedOperator**: no partition of the whole cluster has a replica on, or is led by, a
removed broker — but the partitions the approved plan named stranded (offline on a dead broker,
no live in-sync replica to copy from), which are listed, not failed. Both write their findings to ``verify.json`` in the run folder; in a dry run they
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
from procedures.plan.retiring import remember_drained, retiring_file
from operators.base import DecommissionStep, RunbookOperator
from operators.errors import DrainIncomplete, VerificationFailed
from procedures.waves.book import partition_done
from planning.plan_folder.read import load_plan_artifacts

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


def lagging_followers(snap: ClusterSnapshot, target: dict[TopicPartition, tuple[int, ...]]
                      ) -> dict[int, list[str]]:
    """Broker -> the partitions whose only gap is that broker, a target follower, out of the ISR
    (the replicas equal the plan, nothing reassigning, no reassignment node): a broker catching
    up, or restarting (not registered for a moment). Empty when any other mismatch exists —
    those are not waited on."""
    out: dict[int, list[str]] = {}
    if snap.reassignment is not None:
        return {}
    for tp in sorted(target):
        if not snap.has_partition(tp):
            return {}
        p = snap.partition(tp)
        if partition_done(p, target[tp]):
            continue
        if tuple(p.replicas) != tuple(target[tp]) or p.is_reassigning:
            return {}
        for b in target[tp]:
            if b not in p.isr:
                out.setdefault(b, []).append(str(tp))
    return out


def only_catching_up(snap: ClusterSnapshot, target: dict[TopicPartition, tuple[int, ...]]) -> list[str]:
    """The partitions :func:`lagging_followers` finds, each once."""
    return sorted({tp for tps in lagging_followers(snap, target).values() for tp in tps})


def lag_causes(snap: ClusterSnapshot, lagging: dict[int, list[str]]) -> list[str]:
    """One phrase per broker waited on: not registered (restarting or dead) or catching up."""
    return [f"broker {b} " + ("is not registered (restarting, or dead)" if b not in snap.brokers
                              else "is registered and catching up into the ISR")
            + f" ({len(tps)} partition(s): {', '.join(tps[:3])}{' ...' if len(tps) > 3 else ''})"
            for b, tps in sorted(lagging.items())]


def stranded_in_plan(folder: Any) -> frozenset[TopicPartition]:
    """The partitions the approved plan left on a dead broker (no live in-sync replica to copy from)."""
    doc = folder.read_json(folder.plan_dir / "summary.json") or {}
    return frozenset(TopicPartition(s["topic"], int(s["partition"])) for s in doc.get("stranded") or ())


def drain_problems(snap: ClusterSnapshot, removed: frozenset[int],
                   stranded: frozenset[TopicPartition] = frozenset()) -> list[str]:
    """Partitions with a replica on, or led by, a removed broker — but the ``stranded`` ones the
    approved plan named (offline on a dead broker: nothing to copy from)."""
    out = []
    for p in snap.partitions():
        if stranded and p.tp in stranded:
            continue
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
    """Replicas equal the plan and every ISR is full. While the only gap is target followers out
    of the ISR it waits, naming the brokers: up to ``restart_wait_s`` for a broker that is not
    registered (restarting) to register again, and up to ``isr_wait_s`` in all for the followers
    to catch up."""

    template_fields: Sequence[str] = (*_VerifyStep.template_fields, "isr_wait_s", "restart_wait_s",
                                      "poll_interval_s")
    ui_color = "#d9ead3"

    def __init__(self, *, isr_wait_s: Any = 600.0, restart_wait_s: Any = 120.0, poll_interval_s: Any = 5.0,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.isr_wait_s = isr_wait_s
        self.restart_wait_s = restart_wait_s
        self.poll_interval_s = poll_interval_s

    def _wait_for_followers(self, client, target: dict[TopicPartition, tuple[int, ...]]
                            ) -> tuple[ClusterSnapshot, dict[int, str], float]:
        """The snapshot judged, the brokers waited on (id -> why), the seconds waited."""
        started = time.monotonic()
        deadline = started + float(self.isr_wait_s)
        restart_deadline = started + min(float(self.restart_wait_s), float(self.isr_wait_s))
        waited: dict[int, str] = {}
        while True:
            snap = read_snapshot(client, with_configs=False)
            lagging = lagging_followers(snap, target)
            now = time.monotonic()
            unregistered = [b for b in lagging if b not in snap.brokers]
            if not lagging or now >= deadline or (unregistered and now >= restart_deadline):
                return snap, waited, now - started
            for b in lagging:
                waited[b] = "restarting" if b in unregistered else "catching up"
            until = restart_deadline if unregistered else deadline
            self.log.info("waiting up to %.0fs more: %s", until - now, "; ".join(lag_causes(snap, lagging)))
            time.sleep(min(float(self.poll_interval_s), max(0.0, until - now)))

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        if self.is_dry_run:
            self._record(folder, "final_verify", {"ok": None, "note": "dry run: nothing changed, nothing verified"})
            return {"dry_run": True}
        plan = load_plan_artifacts(str(folder.plan_dir))
        target = dict(plan.target)
        with self.session(context) as (client, _writer):
            snap, waited, waited_s = self._wait_for_followers(client, target)
        problems = plan_mismatches(snap, target)
        if snap.reassignment is not None:
            problems.append(f"/admin/reassign_partitions still exists ({len(snap.reassignment.entries)} entries)")
        waited_on = {str(b): why for b, why in sorted(waited.items())}
        causes = lag_causes(snap, lagging_followers(snap, target)) if problems else []
        self._record(folder, "final_verify", {"ok": not problems, "partitions": len(plan.target),
                                              "problems": problems, "waited_on": waited_on,
                                              "waited_s": round(waited_s, 1), "causes": causes})
        if problems:
            after = f" after waiting {waited_s:.0f}s" if waited else ""
            why = f" ({'; '.join(causes)}{after})" if causes else ""
            raise VerificationFailed(f"{len(problems)} partition(s) do not match the plan{why}: {_summary(problems)}")
        if waited:
            self.log.info("waited %.0fs for %s", waited_s,
                          ", ".join(f"broker {b} ({why})" for b, why in sorted(waited.items())))
        self.log.info("all %d planned partitions have their target replicas and a full ISR", len(plan.target))
        return {"partitions": len(plan.target), "waited_on": waited_on, "waited_s": round(waited_s, 1)}


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
        stranded = stranded_in_plan(folder)
        problems = drain_problems(snap, removed, stranded)
        left = sorted(str(tp) for tp in stranded if snap.has_partition(tp)
                      and set(snap.partition(tp).replicas) & removed)
        self._record(folder, "verify_drained", {"ok": not problems, "removed": sorted(removed), "problems": problems,
                                                "stranded_left": left})
        if problems:
            raise DrainIncomplete(f"brokers {sorted(removed)} are not drained: {_summary(problems)}")
        if left:
            self.log.warning("%d partition(s) still list a dead broker: offline, no live in-sync replica to copy "
                             "from (named in the approved plan): %s; the broker is not recorded as retiring (it "
                             "still holds them: run again once they have a live leader)", len(left),
                             ", ".join(left[:SHOWN]))
            return {"removed": sorted(removed), "retiring": [], "stranded_left": left}
        self.log.info("brokers %s host no replica and lead no partition: safe to shut down", sorted(removed))
        with self.session(context) as (client, _writer):
            added = remember_drained(client, self.run_root, removed, f"{context['dag'].dag_id} run {context['run_id']}",
                                     str(folder.root.resolve()))
        self.log.info("brokers %s recorded as retiring in %s: later plans leave them out until a person releases "
                      "them (kafka-runbook retiring release)", added or sorted(removed), retiring_file(self.run_root))
        return {"removed": sorted(removed), "retiring": sorted(removed)}
