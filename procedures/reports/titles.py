"""How a data-moving runbook names itself in its reports, approval and notification.

:func:`heading` gives ``what`` the run does ("Decommission", "Add brokers", "Rebalance"; other
DAGs: their id, capitalised) and its ``subject`` ("brokers 4, 5", "new brokers 7, 8", or empty),
read from the brokers removed or the plan's ``summary.json``.

Failure: none; a missing or unreadable summary gives an empty subject.
"""

from __future__ import annotations

import json
from typing import Sequence

from procedures.run_folder import RunFolder

#: how each data-moving runbook names itself in its reports (others: the DAG id, capitalised)
WHAT = {"decommission_brokers": "Decommission", "add_brokers": "Add brokers", "rebalance": "Rebalance",
        "change_replication_factor": "Change replication factor", "move_topics": "Move topics",
        "reassign_partitions": "Reassign partitions", "rollback": "Rollback"}


def heading(folder: RunFolder, dag_id: str, removed: Sequence[int]) -> dict:
    """``what`` the run does and its ``subject`` (e.g. "Decommission", "brokers 4, 5"), for titles,
    and ``subject_short`` for the notification's first line."""
    what = WHAT.get(dag_id, dag_id.replace("_", " ").capitalize())
    if removed:
        return {"what": what, "subject": "brokers " + ", ".join(map(str, removed)),
                "subject_short": "brokers " + ",".join(map(str, removed))}
    try:
        summary = json.loads((folder.plan_dir / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        summary = {}
    brokers = str((summary.get("params") or {}).get("brokers") or "")
    if summary.get("operation") == "decommission" and brokers:   # callers that do not pass ``removed``
        return {"what": what, "subject": "brokers " + brokers.replace(",", ", "), "subject_short": "brokers " + brokers}
    if summary.get("operation") == "add-brokers" and brokers:
        return {"what": what, "subject": "new brokers " + brokers.replace(",", ", "),
                "subject_short": "new brokers " + brokers}
    return {"what": what, "subject": "", "subject_short": what.lower()}
