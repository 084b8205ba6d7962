"""The emulator's command queue served on a thread, as ``kafka-runbook sim`` serves it, for tests that
send commands from another session."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

from kafka_sim.control import CommandQueue


@contextmanager
def serving_commands(cluster) -> Iterator[CommandQueue]:
    """``cluster``'s commands served until the block ends."""
    queue = CommandQueue(cluster.tool_client)
    stop = threading.Event()
    server = threading.Thread(target=lambda: [queue.run_pending(cluster, 0.2) for _ in iter(stop.is_set, True)],
                              daemon=True)
    server.start()
    try:
        yield queue
    finally:
        stop.set()
        server.join(5)
