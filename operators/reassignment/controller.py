"""The controller after a decommission: where it is, and (approved, optional) moving it off.

**MoveControllerOperator** reads ``/controller``. When the controller sits on a removed broker,
stopping that broker forces a controller failover at an unplanned moment; with
``move_controller=true`` (a Param, off by default, part of the approved run) the step deletes
``/controller`` through the write gate (audited) so the brokers elect a new one, waits (bounded)
for a controller on a kept broker, and if the election lands on a removed broker again deletes
it again, at most ``max_attempts`` times. Either way it writes ``controller.json`` (before,
after, attempts) for the final report. A dry run plans the delete and waits for nothing.

Failure: :class:`ControllerNotMoved` when no controller appears within the wait, or it is still
on a removed broker after the last attempt (the cluster keeps working: stop the removed brokers
one at a time, each stop then moves the controller).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any, Sequence

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from kafka_zk import paths
from kafka_zk.codecs import InvalidPayload, decode_controller
from kafka_zk.errors import KafkaZkError
from kafka_zk.writer import ZkWriter
from operators.base import DecommissionStep, as_bool

CONTROLLER_FILE = "controller.json"


class ControllerNotMoved(KafkaZkError):
    """The controller could not be moved off the removed brokers within the bounds."""


@dataclass(frozen=True)
class ControllerPlacement:
    """Where the controller was and is, and what this run did about it."""

    requested: bool
    before: int | None
    after: int | None
    removed: tuple[int, ...]
    attempts: int = 0
    dry_run: bool = False

    @property
    def on_removed(self) -> bool:
        return self.after is not None and self.after in self.removed

    def to_json(self) -> dict:
        return {**asdict(self), "removed": list(self.removed), "on_removed": self.on_removed}


def read_controller(client: KazooClient) -> tuple[int | None, int | None]:
    """(controller broker id, czxid of ``/controller``); (None, None) when there is none."""
    try:
        data, stat = client.retry(client.get, paths.CONTROLLER)
    except NoNodeError:
        return None, None
    try:
        return decode_controller(data).broker_id, stat.czxid
    except InvalidPayload:
        return None, stat.czxid


def wait_new_controller(client: KazooClient, old_czxid: int | None, timeout: float,
                        poll: float = 0.2) -> int | None:
    """Bounded wait for a ``/controller`` other than the one created at ``old_czxid``."""
    deadline = time.monotonic() + timeout
    while True:
        broker, czxid = read_controller(client)
        if broker is not None and czxid != old_czxid:
            return broker
        if time.monotonic() >= deadline:
            return None
        time.sleep(poll)


def move_controller_off(client: KazooClient, writer: ZkWriter, removed: frozenset[int], *,
                        max_attempts: int = 3, wait_s: float = 60.0, log: Any = None) -> ControllerPlacement:
    """Delete ``/controller`` until a kept broker holds it (at most ``max_attempts`` deletes)."""
    before, czxid = read_controller(client)
    current, attempts = before, 0
    while current is not None and current in removed:
        if attempts >= max_attempts:
            raise ControllerNotMoved(
                f"the controller is still on removed broker {current} after {attempts} re-election(s): stop the "
                "removed brokers one at a time (each stop moves the controller), or run again")
        writer.delete(paths.CONTROLLER)
        attempts += 1
        if writer.dry_run:
            return ControllerPlacement(True, before, before, tuple(sorted(removed)), attempts, dry_run=True)
        current = wait_new_controller(client, czxid, wait_s)
        if current is None:
            raise ControllerNotMoved(f"no controller was elected within {wait_s:g}s of deleting {paths.CONTROLLER}: "
                                     "check the brokers' logs; the cluster has no controller until one is")
        _, czxid = read_controller(client)
        if log is not None:
            log.info("re-election %d: controller now on broker %s", attempts, current)
    return ControllerPlacement(True, before, current, tuple(sorted(removed)), attempts)


class MoveControllerOperator(DecommissionStep):
    """Record where the controller is; with ``move_controller`` move it off the removed brokers."""

    template_fields: Sequence[str] = (*DecommissionStep.template_fields, "move_controller")
    ui_color = "#d9ead3"

    def __init__(self, *, move_controller: Any = False, max_attempts: int = 3, wait_s: float = 60.0,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.move_controller, self.max_attempts, self.wait_s = move_controller, max_attempts, wait_s

    def execute(self, context: Any) -> dict:
        folder = self.folder(context)
        removed = self.removed
        with self.session(context) as (client, writer):
            if as_bool(self.move_controller):
                placement = move_controller_off(client, writer, removed, max_attempts=self.max_attempts,
                                                wait_s=self.wait_s, log=self.log)
            else:
                broker, _ = read_controller(client)
                placement = ControllerPlacement(False, broker, broker, tuple(sorted(removed)),
                                                dry_run=self.is_dry_run)
        folder.write_json(folder.root / CONTROLLER_FILE, placement.to_json())
        if placement.on_removed:
            self.log.warning("the controller is on removed broker %s: stopping it forces a controller failover "
                             "(set move_controller=true to move it first); stop the removed brokers promptly",
                             placement.after)
        else:
            self.log.info("controller on broker %s (was %s, %d re-election(s))", placement.after, placement.before,
                          placement.attempts)
        return placement.to_json()
