"""A rolling restart's plan: which brokers, in which order, in which batches, with which action.

:func:`plan_roll` turns the inputs (``brokers``: ``all`` or ids; ``racks``: only these racks;
``by``: ``broker`` — one broker at a time, the default — or ``rack`` — every chosen broker of one
rack at once, never two racks down together) and the live cluster into a :class:`RestartPlan`:
rack by rack (racks by name, brokers without a rack last), brokers by id, except that the current
controller's rack goes last and the controller last within it (one controller move per roll, not
one per broker). The plan is the document the approval approves (``restart_plan.json``).

:func:`render_action` puts a broker into the action template: ``{broker}``, ``{host}`` and
``{rack}`` are replaced literally (nothing else in the command is interpreted, so shell braces and
``$VARS`` pass through).

Failure: :class:`~kafka_zk.errors.InvalidInput` naming the input and the fix: an unknown or
unregistered broker, a rack no chosen broker is in, ``by`` not broker/rack, an empty action
template, a template without ``{broker}`` or ``{host}`` (it would restart the same thing every time).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any, Sequence

from kafka_zk.errors import InvalidInput
from kafka_zk.model import ClusterSnapshot
from kafka_zk.validation import parse_broker_ids

BY = ("broker", "rack")
PLACEHOLDERS = ("{broker}", "{host}", "{rack}")


@dataclass(frozen=True)
class RestartPlan:
    """What the approval approves: the batches in order (broker ids), their racks and hosts, the action."""

    batches: tuple[tuple[int, ...], ...]
    racks: dict[str, str | None]        # broker id (text) -> rack
    hosts: dict[str, str | None]        # broker id (text) -> host it registered
    by: str
    action: str
    controller: int | None

    @property
    def brokers(self) -> tuple[int, ...]:
        return tuple(b for batch in self.batches for b in batch)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "batches": [list(b) for b in self.batches]}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> "RestartPlan":
        return cls(tuple(tuple(int(b) for b in batch) for batch in doc["batches"]), dict(doc["racks"]),
                   dict(doc["hosts"]), doc["by"], doc["action"], doc.get("controller"))

    def command(self, broker: int) -> str:
        """The action for ``broker``: the template with its id, registered host and rack put in."""
        return render_action(self.action, broker, self.hosts.get(str(broker)), self.racks.get(str(broker)))

    def sha256(self) -> str:
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()

    def text(self) -> str:
        """The order as the approver reads it (Markdown)."""
        lines = [f"Rolling restart of {len(self.brokers)} broker(s), "
                 f"{'one broker' if self.by == 'broker' else 'one rack'} at a time, in this order:", "",
                 "| # | broker(s) | rack | host(s) |", "|---|---|---|---|"]
        for i, batch in enumerate(self.batches, 1):
            racks = sorted({rack_text(self.racks.get(str(b))) for b in batch})
            lines.append(f"| {i} | {', '.join(map(str, batch))} | {', '.join(racks)} | "
                         f"{', '.join(str(self.hosts.get(str(b))) for b in batch)} |")
        if self.controller in self.brokers:
            lines += ["", f"The controller (broker {self.controller}) is restarted last: one controller move."]
        lines += ["", f"Restart action, run once per broker: `{self.action}`"]
        return "\n".join(lines)


def rack_text(rack: str | None) -> str:
    """A broker's rack as the approver reads it: ``no rack`` when the broker registered none."""
    return "no rack" if rack is None or str(rack) in ("", "None") else str(rack)


def _rack_key(rack: str | None) -> tuple[int, str]:
    return (1, "") if rack is None else (0, rack)


def plan_roll(snapshot: ClusterSnapshot, brokers: Any, racks: Sequence[str] | None, by: str, action: str) -> RestartPlan:
    """The plan of a roll on the live cluster (see module docstring)."""
    if by not in BY:
        raise InvalidInput(f"by={by!r}: give 'broker' (one at a time) or 'rack' (one rack at a time)")
    action = (action or "").strip()
    if not action:
        raise InvalidInput("the restart action is empty: give a command template such as "
                           "'ssh {host} sudo systemctl restart kafka'")
    if "{broker}" not in action and "{host}" not in action:
        raise InvalidInput(f"the restart action {action!r} names no broker: put {{broker}} or {{host}} in it "
                           "(it is run once per broker)")
    live = snapshot.brokers
    if brokers in (None, "", "all", ["all"]):
        chosen = sorted(live)
    else:
        chosen = parse_broker_ids(brokers, "brokers")
        unknown = sorted(set(chosen) - set(live))
        if unknown:
            raise InvalidInput(f"brokers {unknown} are not registered under /brokers/ids (live: "
                               f"{sorted(live)}): a roll restarts running brokers; start them first or leave them out")
    if racks:
        wanted = {str(r) for r in racks}
        have = {str(live[b].rack) for b in chosen}
        missing = sorted(wanted - have)
        if missing:
            raise InvalidInput(f"racks {missing}: no chosen broker is in them (racks of the chosen brokers: "
                               f"{sorted(have)})")
        chosen = [b for b in chosen if str(live[b].rack) in wanted]
    controller = snapshot.controller_id
    by_rack: dict[str | None, list[int]] = {}
    for b in chosen:
        by_rack.setdefault(live[b].rack, []).append(b)
    last = live[controller].rack if controller in chosen else object()
    order = sorted(by_rack, key=lambda r: (r == last, _rack_key(r)))
    batches: list[tuple[int, ...]] = []
    for rack in order:
        ids = sorted(by_rack[rack], key=lambda b: (b == controller, b))
        batches += [tuple(ids)] if by == "rack" else [(b,) for b in ids]
    return RestartPlan(tuple(batches), {str(b): live[b].rack for b in chosen},
                       {str(b): live[b].host for b in chosen}, by, action, controller)


def render_action(template: str, broker: int, host: str | None, rack: str | None) -> str:
    """The command for one broker: the placeholders replaced, nothing else touched."""
    return (template.replace("{broker}", str(broker)).replace("{host}", host or "")
            .replace("{rack}", rack or ""))
