"""Broker disk capacity: the usable bytes per broker a plan must not overfill, and its formats.

Kafka 2.4 reports partition sizes (``kafka-log-dirs.sh --describe``) but not disk capacity, so
capacity comes from the user, in one of two JSON documents (told apart by content):

* **Cruise Control's capacity file**, read as a fact format::

      {"brokerCapacities": [
         {"brokerId": "-1", "capacity": {"DISK": "500000", "CPU": "100", ...}},
         {"brokerId": "3",  "capacity": {"DISK": {"/data1": "250000", "/data2": "250000"}}}]}

  ``DISK`` is in MiB (as Cruise Control counts it); a per-log-directory object (JBOD) is summed
  to the broker's total; ``brokerId`` ``"-1"`` is the default for brokers not listed. Other
  resources are ignored.
* **The native form**: ``{"version": 1, "default_bytes": 2000000000000, "brokers": {"1": 1000000000000}}``
  (bytes; ``default_bytes`` optional). The connection's ``extra.broker_capacity_bytes`` uses the
  same ``brokers`` map (``{"1": ..., "default": ...}``).

The threshold is the share of capacity a broker may hold after any step of the plan (default
85 %). A broker with no capacity (not listed, no default) is "capacity unknown" and reported as
such, never treated as infinite silently.

Failure: :class:`kafka_zk.errors.InvalidInput` naming the file, the entry and the fix, for a
document in neither form, a non-positive or non-numeric capacity, a broker id that is not an
integer, or a threshold outside (0, 100].
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from kafka_zk.errors import InvalidInput

MIB = 1024 * 1024
DEFAULT_THRESHOLD_PCT = 85.0


@dataclass(frozen=True)
class DiskCapacity:
    """Usable bytes per broker (``default`` for the rest) and the fill threshold in percent."""

    brokers: Mapping[int, int] = field(default_factory=dict)
    default: int | None = None
    threshold_pct: float = DEFAULT_THRESHOLD_PCT
    source: str = ""

    def __post_init__(self) -> None:
        check_threshold(self.threshold_pct, self.source or "capacity")

    def capacity(self, broker: int) -> int | None:
        """Usable bytes of ``broker``, or None when unknown."""
        return self.brokers.get(broker, self.default)

    def limit(self, broker: int) -> int | None:
        """The most bytes ``broker`` may hold at any step: capacity × threshold (None: unknown)."""
        cap = self.capacity(broker)
        return None if cap is None else math.floor(cap * self.threshold_pct / 100.0)

    def limits(self, brokers: list[int] | tuple[int, ...]) -> dict[int, int]:
        """``limit`` of every broker of ``brokers`` whose capacity is known."""
        out = {}
        for b in brokers:
            lim = self.limit(b)
            if lim is not None:
                out[b] = lim
        return out

    def to_json(self) -> dict[str, Any]:
        return {"version": 1, "default_bytes": self.default, "threshold_pct": self.threshold_pct,
                "brokers": {str(b): v for b, v in sorted(self.brokers.items())}, "source": self.source}


def check_threshold(pct: Any, where: str) -> float:
    try:
        value = float(pct)
    except (TypeError, ValueError):
        raise InvalidInput(f"{where}: disk threshold {pct!r} is not a number; give a percentage such as 85") from None
    if not math.isfinite(value) or not 0 < value <= 100:
        raise InvalidInput(f"{where}: disk threshold {pct!r} must be a percentage in (0, 100], e.g. 85")
    return value


def _bytes(value: Any, where: str, unit: int = 1) -> int:
    """A positive whole number of bytes from a JSON number or numeric string (× ``unit``)."""
    if isinstance(value, bool):
        raise InvalidInput(f"{where}: {value!r} is not a size; give a positive number")
    try:
        number = float(value) if isinstance(value, str) else value
    except ValueError:
        raise InvalidInput(f"{where}: {value!r} is not a number; give a positive size") from None
    if not isinstance(number, (int, float)) or not math.isfinite(number) or number <= 0:
        raise InvalidInput(f"{where}: {value!r} is not a positive size; give a number > 0")
    out = int(number * unit)
    if out <= 0 or out >= 2 ** 63:
        raise InvalidInput(f"{where}: {value!r} is out of range; give a size between 1 byte and 8 EiB")
    return out


def _broker_id(key: Any, where: str) -> int:
    text = str(key)
    if not (text.isascii() and text.lstrip("-").isdigit()):
        raise InvalidInput(f"{where}: broker id {key!r} is not an integer; write e.g. \"3\"")
    return int(text)


def _cruise_control(doc: Mapping[str, Any], where: str) -> tuple[dict[int, int], int | None]:
    entries = doc["brokerCapacities"]
    if not isinstance(entries, list) or not entries:
        raise InvalidInput(f"{where}: brokerCapacities must be a non-empty list of "
                           '{"brokerId": ..., "capacity": {"DISK": ...}} entries')
    brokers: dict[int, int] = {}
    default = None
    for i, entry in enumerate(entries):
        at = f"{where}: brokerCapacities[{i}]"
        if not isinstance(entry, dict) or "brokerId" not in entry or not isinstance(entry.get("capacity"), dict):
            raise InvalidInput(f'{at}: expected {{"brokerId": "<id>", "capacity": {{"DISK": "<MiB>"}}}}')
        bid = _broker_id(entry["brokerId"], at)
        disk = entry["capacity"].get("DISK")
        if disk is None:
            raise InvalidInput(f"{at}: no DISK capacity; add \"DISK\": \"<MiB>\" (or one per log directory)")
        if isinstance(disk, dict):
            if not disk:
                raise InvalidInput(f"{at}: DISK lists no log directory; give {{\"/data\": \"<MiB>\"}}")
            total = sum(_bytes(v, f"{at} DISK[{d!r}]", MIB) for d, v in disk.items())
        else:
            total = _bytes(disk, f"{at} DISK", MIB)
        if bid == -1:
            default = total
        elif bid < 0:
            raise InvalidInput(f"{at}: broker id {bid} is negative; only -1 (the default) may be")
        elif bid in brokers:
            raise InvalidInput(f"{at}: broker {bid} is listed twice; keep one entry per broker")
        else:
            brokers[bid] = total
    return brokers, default


def _native(doc: Mapping[str, Any], where: str) -> tuple[dict[int, int], int | None]:
    unknown = sorted(set(doc) - {"version", "brokers", "default_bytes", "threshold_pct", "source"})
    if unknown:
        raise InvalidInput(f"{where}: unknown key(s) {unknown}; the native form has version, brokers, default_bytes")
    raw = doc.get("brokers", {})
    if not isinstance(raw, dict):
        raise InvalidInput(f'{where}: "brokers" must map broker ids to bytes, e.g. {{"1": 1000000000000}}')
    brokers = {}
    default = None if doc.get("default_bytes") is None else _bytes(doc["default_bytes"], f"{where}: default_bytes")
    for key, value in raw.items():
        if str(key) == "default":
            default = _bytes(value, f"{where}: brokers.default")
            continue
        bid = _broker_id(key, f"{where}: brokers")
        if bid < 0:
            raise InvalidInput(f"{where}: broker id {bid} is negative; give the broker ids of the cluster")
        brokers[bid] = _bytes(value, f"{where}: brokers[{key!r}]")
    if not brokers and default is None:
        raise InvalidInput(f"{where}: no capacity given; list brokers ({{\"1\": <bytes>}}) or default_bytes")
    return brokers, default


def parse_capacity(doc: Any, where: str, threshold_pct: Any = None) -> DiskCapacity:
    """A :class:`DiskCapacity` from a decoded document in either form (see the module docstring).

    The threshold is ``threshold_pct`` when given, else the native document's own
    ``threshold_pct``, else :data:`DEFAULT_THRESHOLD_PCT`.
    """
    if not isinstance(doc, dict):
        raise InvalidInput(f"{where}: expected a JSON object (Cruise Control's capacity file or "
                           '{"brokers": {"<id>": <bytes>}}), got ' + type(doc).__name__)
    if "brokerCapacities" in doc:
        brokers, default = _cruise_control(doc, where)
    else:
        brokers, default = _native(doc, where)
    if threshold_pct is None:
        threshold_pct = doc.get("threshold_pct", DEFAULT_THRESHOLD_PCT) if "brokerCapacities" not in doc \
            else DEFAULT_THRESHOLD_PCT
    return DiskCapacity(brokers, default, check_threshold(threshold_pct, where), where)


def read_capacity_file(path: str, threshold_pct: Any = None) -> DiskCapacity:
    """Read and check a capacity file (either form); nothing else is touched."""
    try:
        with open(path, "rb") as f:
            raw = f.read(16 * MIB + 1)
    except OSError as exc:
        raise InvalidInput(f"capacity file {path}: {exc.strerror or exc}; give a readable JSON file") from None
    if len(raw) > 16 * MIB:
        raise InvalidInput(f"capacity file {path}: larger than 16 MiB; a capacity file lists one entry per broker")
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InvalidInput(f"capacity file {path}: not UTF-8 text; save it as UTF-8 JSON") from None
    except (json.JSONDecodeError, RecursionError) as exc:
        line = getattr(exc, "lineno", "?")
        raise InvalidInput(f"capacity file {path}: invalid JSON at line {line}; fix the syntax") from None
    return parse_capacity(doc, f"capacity file {path}", threshold_pct)


def write_capacity(path: str, capacity: DiskCapacity) -> None:
    """The capacity in its native form (what the snapshot step leaves in the run folder)."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(capacity.to_json(), f, sort_keys=True)
        f.write("\n")
