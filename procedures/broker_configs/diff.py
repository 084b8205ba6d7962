"""What a broker config spec changes on the live cluster (pure): :func:`broker_config_diff`.

For each entity of the spec, against its live overrides (``/config/brokers/<entity>``):

* a ``set`` key whose live value differs (or is absent) → set, with the value before;
* a ``delete`` key that is set → deleted; one that is not set is already as the spec says (listed,
  not written: a second run of the same spec writes nothing);
* an entity with neither → unchanged. Keys the spec does not name (a throttle a reassignment set,
  another person's override) are kept as they are.

A broker id that is not registered in ``/brokers/ids`` is refused (a typo, or a broker that is
down: its overrides would wait unseen). The diff is a JSON document (``to_json``) whose sha256 the
approval pins: the apply step recomputes it on the live cluster and refuses any difference.

Failure: :class:`InvalidInput` listing every refusal at once; nothing has been written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Collection, Mapping, Sequence

from kafka_zk.broker_configs import where
from kafka_zk.errors import InvalidInput
from kafka_zk import paths
from procedures.broker_configs.spec import EntitySpec
from procedures.plan.declarative import SpecDiff


@dataclass
class BrokerConfigDiff(SpecDiff):
    """The writes a spec makes: ``changes``, one entry per entity written; ``already_unset``, keys to
    delete that are not set; ``unchanged``, entities already as the spec says."""

    changes: list[dict] = field(default_factory=list)
    already_unset: list[dict] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    @property
    def writes_nothing(self) -> bool:
        return not self.changes

    def text(self) -> str:
        lines = []
        for c in self.changes:
            parts = [f"{k}: {c['before'].get(k, '(not set)')} → {v}" for k, v in c["set"].items()]
            parts += [f"{k}: {c['before'][k]} → (deleted)" for k in c["delete"]]
            lines.append(f"- **{where(c['entity'])}** (`/config/brokers/{c['entity']}`): " + ", ".join(parts))
        lines += [f"- {where(u['entity'])}: {', '.join(u['keys'])} already not set (nothing to delete)"
                  for u in self.already_unset]
        lines += [f"- {where(e)}: already as the spec says" for e in self.unchanged]
        if self.writes_nothing:
            lines.insert(0, "Nothing to change: the cluster already matches the spec.")
        return "\n".join(lines)


def broker_config_diff(spec: Sequence[EntitySpec], live: Mapping[str, Mapping[str, str]],
                       registered: Collection[int]) -> BrokerConfigDiff:
    """The diff of ``spec`` against the ``live`` overrides of its entities (see module docstring)."""
    diff, refusals = BrokerConfigDiff(), []
    for e in spec:
        if e.entity != paths.BROKER_DEFAULT_ENTITY and int(e.entity) not in registered:
            refusals.append(f"broker {e.entity} is not in the cluster (registered: "
                            f"{', '.join(map(str, sorted(registered))) or 'none'}): fix the id, or start the broker "
                            "and run again")
            continue
        now = live.get(e.entity, {})
        changed = {k: v for k, v in sorted(e.set.items()) if now.get(k) != v}
        deleted = sorted(k for k in e.delete if k in now)
        unset = sorted(k for k in e.delete if k not in now)
        if unset:
            diff.already_unset.append({"entity": e.entity, "keys": unset})
        if changed or deleted:
            diff.changes.append({"entity": e.entity, "set": changed, "delete": deleted,
                                 "before": {k: now[k] for k in sorted({*changed, *deleted}) if k in now}})
        elif not unset:
            diff.unchanged.append(e.entity)
    if refusals:
        raise InvalidInput(f"the broker config spec cannot be applied ({len(refusals)} problem(s)), nothing was "
                           "written: " + "; ".join(refusals))
    return diff
