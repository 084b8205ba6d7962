"""Plain-kazoo reads and waits used by the emulator tests (never the emulator's own code)."""

from __future__ import annotations

import json
import time
from typing import Any, Callable

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError


def get_json(zk: KazooClient, path: str) -> Any:
    try:
        data, _ = zk.get(path)
    except NoNodeError:
        return None
    return json.loads(data) if data else None


def state(zk: KazooClient, topic: str, partition: int) -> dict | None:
    return get_json(zk, f"/brokers/topics/{topic}/partitions/{partition}/state")


def topic(zk: KazooClient, name: str) -> dict | None:
    return get_json(zk, f"/brokers/topics/{name}")


def create_json(zk: KazooClient, path: str, doc: Any) -> None:
    zk.create(path, json.dumps(doc).encode(), makepath=True)


def wait_for(predicate: Callable[[], Any], timeout: float = 20.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


def writes_to(journal, path: str, tool: bool = False) -> list[Any]:
    """Decoded payloads the emulator's brokers/controller wrote to ``path`` (None for a
    delete), in order; ``tool=True`` includes the emulator's seeding writes."""
    out = []
    for w in journal:
        if w.path == path and (tool or w.writer != "tool"):
            out.append(None if w.op == "delete" else (json.loads(w.data) if w.data else w.data))
    return out


def isr_change_consumed(journal, topic: str, partition: int) -> bool:
    """A leader announced an ISR change of topic-partition and the controller deleted it."""
    created = [w.path for w in journal if w.op == "create" and "/isr_change_" in w.path and w.data
               and {"topic": topic, "partition": partition} in json.loads(w.data)["partitions"]]
    deleted = {w.path for w in journal if w.op == "delete"}
    return any(p in deleted for p in created)
