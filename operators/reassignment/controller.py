"""The controller after a decommission: where it is, and (approved, optional) moving it off.

**MoveControllerOperator** reads ``/controller``. When the controller sits on a removed broker,
stopping that broker forces a controller failover at an unplanned moment; with
``move_controller=true`` (a Param, off by default, part of the approved run) the step moves it
through the admin action :func:`kafka_zk.admin.controller.move_controller_off` (delete
``/controller`` through the write gate, wait bounded for a controller on a kept broker, delete
again at most ``max_attempts`` times). Either way it writes ``controller.json`` (before, after,
attempts) for the final report. A dry run plans the delete and waits for nothing.

Failure: :class:`kafka_zk.admin.controller.ControllerNotMoved` (see there).
"""

from __future__ import annotations

from typing import Any, Sequence

from kafka_zk.admin.controller import ControllerPlacement, move_controller_off, read_controller
from operators.base import DecommissionStep, as_bool

CONTROLLER_FILE = "controller.json"


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
