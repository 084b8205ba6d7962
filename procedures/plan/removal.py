"""Which brokers a decommission removes, read from the run's snapshot file and its Params: a dead
broker (not registered, still holding replicas: :func:`snapshot_hosting` counts them) and the
"replace 4 with 7" pairs (:func:`replace_pairs`).

Failure: :class:`kafka_zk.errors.InputRefused` for ``replace_with`` lists that do not pair with
``brokers_to_remove`` (:func:`kafka_zk.validation.parse_replacements`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from kafka_zk.validation import parse_replacements


def snapshot_hosting(path: Path, ids: Iterable[int]) -> dict[int, int]:
    """Replicas each of ``ids`` holds in a snapshot file (JSON lines; a broker that holds none is
    absent): what tells a dead broker (unregistered, still holding replicas) from an unknown id."""
    wanted = frozenset(ids)
    counts: dict[int, int] = {}
    if not wanted:
        return counts
    with open(path, encoding="utf-8") as f:
        for line in f:
            if '"partition"' not in line:
                continue
            doc = json.loads(line)
            if doc.get("kind") == "partition":
                for b in doc.get("replicas") or ():
                    if b in wanted:
                        counts[b] = counts.get(b, 0) + 1
    return counts


def replace_pairs(brokers_to_remove: Any, replace_with: Any) -> dict[int, int]:
    """``replace_with`` paired in order with ``brokers_to_remove`` (replace 4 with 7: ``{4: 7}``);
    empty when ``replace_with`` is not given (a plain decommission)."""
    if replace_with in (None, "", [], "[]"):
        return {}
    return parse_replacements(brokers_to_remove, replace_with, "brokers_to_remove", "replace_with")
