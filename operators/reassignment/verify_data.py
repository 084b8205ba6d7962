"""Data-level check after the last wave (``verify_data`` Param, off by default): every replica
the plan added has the same log end offset and the same last batch (offset and CRC) as its
partition's leader, read over the Kafka protocol (:mod:`replica_verify.tails`) from the
brokers' PLAINTEXT endpoints in their ZooKeeper registrations. Findings go to ``verify.json``
(key ``verify_data``); a replica behind its leader (traffic still arriving) is listed with its
lag, not failed. Off, or in a dry run, it records why it did nothing.

Failure: :class:`VerificationFailed` naming the first replicas whose last batch differs from the
leader's, that are past the leader, or whose broker cannot be reached (within ``timeout_s``).
"""

from __future__ import annotations

from typing import Any, Sequence

from planning.plan_folder.read import load_plan_artifacts
from kafka_zk.snapshot import read_snapshot
from operators.base import as_bool
from operators.errors import VerificationFailed
from operators.reassignment.verify import SHOWN, _VerifyStep
from replica_verify.discovery import PartitionId
from replica_verify.errors import VerifyError
from replica_verify.tails import check_tails


def plaintext_endpoint(host: str | None, port: int, endpoints: Sequence[str]) -> tuple[str, int] | None:
    """The broker's PLAINTEXT listener (the one this check can speak), else its host/port."""
    for ep in endpoints:
        proto, _, rest = ep.partition("://")
        if proto == "PLAINTEXT" and ":" in rest:
            h, _, p = rest.rpartition(":")
            return (h.strip("[]") or (host or ""), int(p))
    if not endpoints and host and port > 0:
        return host, port
    return None


class DataVerifyOperator(_VerifyStep):
    """Moved replicas' log end offsets and last batches equal their leaders'."""

    template_fields: Sequence[str] = (*_VerifyStep.template_fields, "verify_data", "timeout_s")
    ui_color = "#d9ead3"

    def __init__(self, *, verify_data: Any = False, timeout_s: Any = 10.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.verify_data = verify_data
        self.timeout_s = timeout_s

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        if not as_bool(self.verify_data):
            self._record(folder, "verify_data", {"ok": None, "note": "verify_data is off"})
            return {"skipped": True}
        if self.is_dry_run:
            self._record(folder, "verify_data", {"ok": None, "note": "dry run: nothing changed, nothing verified"})
            return {"dry_run": True}
        plan = load_plan_artifacts(str(folder.plan_dir))
        with self.session(context) as (client, _writer):
            snap = read_snapshot(client, with_configs=False)
        endpoints = {}
        for b in snap.brokers.values():
            ep = plaintext_endpoint(b.host, b.port, b.endpoints)
            if b.live and ep is not None:
                endpoints[b.id] = ep
        moved, leaderless = [], []
        for tp, target in sorted(plan.target.items()):
            before = set(plan.rollback.get(tp, ()))
            leader = snap.partition(tp).leader if snap.has_partition(tp) else None
            if leader is None or leader < 0:
                leaderless.append(f"{tp}: no leader to compare with")
                continue
            for r in target:
                if r not in before and r != leader:
                    moved.append((PartitionId(tp.topic, tp.partition), r, leader))
        try:
            checks = check_tails(endpoints, moved, float(self.timeout_s))
        except VerifyError as exc:
            self._record(folder, "verify_data", {"ok": False, "problems": [str(exc)]})
            raise VerificationFailed(f"data check could not run: {exc}") from None
        problems = leaderless + [f"{c.partition} replica {c.replica} (leader {c.leader}): {c.problem}" for c in checks if c.problem]
        behind = [f"{c.partition} replica {c.replica}: {c.lag} behind" for c in checks if c.lag and not c.problem]
        self._record(folder, "verify_data", {"ok": not problems, "replicas": len(checks), "problems": problems,
                                             "behind": behind})
        if problems:
            more = f" (and {len(problems) - SHOWN} more)" if len(problems) > SHOWN else ""
            raise VerificationFailed(f"{len(problems)} moved replica(s) differ from their leaders: "
                                     + "; ".join(problems[:SHOWN]) + more)
        self.log.info("%d moved replicas match their leaders' log end offsets and last batches (%d behind)",
                      len(checks), len(behind))
        return {"replicas": len(checks), "behind": len(behind)}
