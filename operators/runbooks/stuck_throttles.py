"""The stuck_reassignment runbook's ``throttles`` fix: remove the throttles a foreign tool left, as approved.

Kafka's ``kafka-reassign-partitions --execute --throttle`` sets rates on the brokers of a move
(a dead target's too) and throttled-replica lists on its topics, and only its ``--verify`` removes
them, once the move it started has finished — never after a revert. The diagnosis lists every
throttle no runbook run of ours owns, with its values (:func:`kafka_zk.health.owners.foreign_throttles`);
approved on its own (``approve_throttles``), :class:`RemoveForeignThrottlesOperator` removes exactly
those keys, once nothing moves: a key whose value changed since the diagnosis, or that a run of ours
now owns, is left as it is (said in ``foreign_throttles_removed.json`` and the final report). Each
entity is one config write and one change notification, through the write gate, which needs the
approval of this fix of the diagnosis on disk (audited).

Failure: :class:`operators.runbooks.stuck.StillStuck` while a move is still pending (the throttles
are kept: they may still be needed); the approval errors.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk.exceptions import AirflowSkipException

from kafka_zk.admin.throttles import remove_exact_keys
from kafka_zk.audit import utc_now_iso
from kafka_zk.authority import WriteAuthority
from kafka_zk.health.owners import find_throttle_owners
from kafka_zk.snapshot import read_snapshot
from operators.approval.change import require_change_approval
from operators.base import RunbookOperator
from operators.runbooks.stuck import DIAGNOSIS, THROTTLES_REMOVED, StillStuck, read_diagnosis
from operators.runtime import change_approval

FIX = "throttles"


def entity_of(text: str) -> tuple[str, str]:
    """``broker 6`` → ("brokers", "6"); ``topic t`` → ("topics", "t") (the diagnosis' entity names)."""
    kind, _, name = text.partition(" ")
    return {"broker": "brokers", "topic": "topics"}[kind], name


class RemoveForeignThrottlesOperator(RunbookOperator):
    """Remove exactly the approved foreign throttles once nothing moves (see module docstring)."""

    def write_authority(self, folder) -> WriteAuthority:
        return change_approval(folder, FIX, DIAGNOSIS)

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        doc = read_diagnosis(folder)
        if not doc.get("foreign_throttles"):
            raise AirflowSkipException("the diagnosis found no foreign throttle")
        if not self.is_dry_run:
            if folder.read_json(folder.root / f"approval_{FIX}.json") is None:
                raise AirflowSkipException("the throttles fix was not asked (another fix was rejected): they are kept")
            require_change_approval(folder, FIX, DIAGNOSIS)
        owners = find_throttle_owners(self.run_root)
        entities = []
        with self.session(context) as (client, writer):
            snap = read_snapshot(client, with_configs=False)
            moving = sorted(str(p.tp) for p in snap.partitions() if p.is_reassigning)
            if not self.is_dry_run and (snap.reassignment is not None or moving):
                raise StillStuck(f"a move is still pending ({', '.join(moving[:5]) or '/admin/reassign_partitions'}"
                                 "): the foreign throttles are kept; run again once nothing moves")
            for t in doc["foreign_throttles"]:
                kind, name = entity_of(t["entity"])
                owner = owners.owner_of("broker" if kind == "brokers" else "topic", name)
                if owner is not None:
                    entities.append({"entity": t["entity"], "removed": [],
                                     "left": [f"{k}: now set by {owner.dag_id} run {owner.run_id}" for k in t["keys"]]})
                    continue
                removed, left = remove_exact_keys(writer, kind, name, t["keys"])
                entities.append({"entity": t["entity"], "removed": removed, "left": left})
        folder.write_json(folder.root / THROTTLES_REMOVED, {"at": utc_now_iso(), "dry_run": self.is_dry_run,
                                                            "entities": entities})
        gone = sum(len(e["removed"]) for e in entities)
        self.log.info("foreign throttles: %d key(s) removed%s; left: %s", gone, " (dry run)" if self.is_dry_run else "",
                      "; ".join(f"{e['entity']}: {why}" for e in entities for why in e["left"]) or "none")
        return {"removed": gone, "left": sum(len(e["left"]) for e in entities)}


__all__ = ["RemoveForeignThrottlesOperator", "entity_of"]
