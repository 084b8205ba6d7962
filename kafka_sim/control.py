"""Faults on demand for an emulator running in another process, through ZooKeeper.

A running ``kafka-runbook sim`` watches ``/kafka-sim/commands`` (emulator-only path). A client
(:func:`send_command`, used by ``kafka-runbook sim fault``) creates a sequential
``command_<seq>`` node holding ``{"command": ..., "args": {...}}``; the emulator runs it on its
main thread (:class:`CommandQueue`) and writes back ``{"status": "done"|"error", ...}``; the
client reads the answer and deletes the node.

Failure: an unknown command or bad arguments come back as ``status: error`` with the message;
:func:`send_command` raises :class:`kafka_zk.errors.InvalidInput` with it, or
:class:`kafka_zk.errors.KafkaZkError` when no emulator answers within the timeout.
"""

from __future__ import annotations

import json
import queue
import threading
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import NoNodeError

from kafka_sim import zk_io
from kafka_zk.errors import InvalidInput, KafkaZkError

COMMANDS_PATH = "/kafka-sim/commands"
PREFIX = COMMANDS_PATH + "/command_"

#: command name -> (cluster method, argument names)
COMMANDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "kill-broker": ("kill_broker", ("broker",)),
    "restart-broker": ("restart_broker", ("broker",)),
    "restart": ("restart_process", ("broker", "stop_s", "start_s")),
    "shutdown-broker": ("shutdown_broker", ("broker",)),
    "expire-session": ("expire_session", ("broker",)),
    "move-controller": ("move_controller", ("to",)),
    "stall-replica": ("stall_replica", ("topic", "partition", "broker", "stalled")),
    "slow-broker": ("slow_broker", ("broker", "rate")),
    "corrupt-record": ("corrupt_record", ("topic", "partition", "broker", "offset", "how")),
}


class CommandQueue:
    """Emulator side: collects new command nodes (watch thread) for the main loop to run.

    The children watch is set again whenever the session connects: a session that expired (a
    ZooKeeper outage longer than its timeout, a process starved that long) lost its watches, and
    the commands sent meanwhile are found by listing again (CI 2026-12-02: a roll's next restart
    never answered after its 6 s outage)."""

    def __init__(self, client: KazooClient) -> None:
        self.client = client
        self.items: queue.Queue[str] = queue.Queue()
        self._seen: set[str] = set()
        self._lock = threading.Lock()
        zk_io.ensure_path(client, COMMANDS_PATH)
        client.add_listener(self._on_state)
        self._watch()

    def _on_state(self, state: str) -> None:
        if state == KazooState.CONNECTED:     # a listener must not block: list on kazoo's handler
            self.client.handler.spawn(self._watch)

    def _watch(self, event: Any = None) -> None:
        try:
            kids = self.client.get_children(COMMANDS_PATH, watch=self._watch)
        except Exception:  # noqa: BLE001 - client closing
            return
        with self._lock:
            for k in sorted(kids):
                if k not in self._seen:
                    self._seen.add(k)
                    self.items.put(k)

    def run_pending(self, cluster: Any, timeout: float) -> None:
        """Run the commands that arrived (waits up to ``timeout`` for the first)."""
        try:
            name = self.items.get(timeout=timeout)
        except queue.Empty:
            return
        while True:
            self._run_one(cluster, name)
            try:
                name = self.items.get_nowait()
            except queue.Empty:
                return

    def _run_one(self, cluster: Any, name: str) -> None:
        path = f"{COMMANDS_PATH}/{name}"
        try:
            data, _ = self.client.get(path)
            doc = json.loads(data)
            if "status" in doc:
                return
            method, argnames = COMMANDS[doc["command"]]
            args = doc.get("args") or {}
            unknown = set(args) - set(argnames)
            if unknown:
                raise InvalidInput(f"{doc['command']}: unknown arguments {sorted(unknown)}")
            result = getattr(cluster, method)(*[args.get(n) for n in argnames if n in args])
            answer = {"status": "done", "result": result}
        except NoNodeError:
            return
        except (KeyError, ValueError, TypeError) as exc:
            answer = {"status": "error", "message": f"bad command {name}: {exc!r}; commands: "
                                                     f"{', '.join(sorted(COMMANDS))}"}
        except KafkaZkError as exc:
            answer = {"status": "error", "message": str(exc)}
        try:
            zk_io.answer_command(self.client, path, json.dumps(answer).encode("utf-8"))
        except NoNodeError:
            pass


def send_command(client: KazooClient, command: str, args: dict[str, Any], timeout: float = 30.0) -> Any:
    """Ask the emulator on this chroot to run ``command``; its result, or raise its error."""
    if command not in COMMANDS:
        raise InvalidInput(f"unknown fault {command!r}: use one of {', '.join(sorted(COMMANDS))}")
    path = zk_io.create_command(client, PREFIX, json.dumps({"command": command, "args": args}).encode())
    done = threading.Event()

    def watch(event: Any = None) -> None:
        try:
            data, _ = client.get(path, watch=watch)
        except NoNodeError:
            done.set()
            return
        except Exception:  # noqa: BLE001 - client closing: the caller reads the node itself
            return
        if b'"status"' in data:
            done.set()
    watch()
    finished = done.wait(timeout)
    try:
        data, _ = client.get(path)
        zk_io.plain_delete(client, path, zk_io.Journal(False), "tool")
    except NoNodeError:
        data = b"{}"
    if not finished:
        raise KafkaZkError(f"no emulator answered {command} within {timeout:g}s on this chroot: "
                           "is `kafka-runbook sim` running against the same --zookeeper?")
    answer = json.loads(data)
    if answer.get("status") != "done":
        raise InvalidInput(answer.get("message", f"{command} failed"))
    return answer.get("result")

