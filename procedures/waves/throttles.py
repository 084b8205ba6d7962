"""The run's throttle record and rate: what every throttling step shares, without Airflow.

:func:`resolve_rate` is the rate a run throttles at (its Param, else the plan's).
:func:`record_then_apply` saves the :class:`~kafka_zk.admin.throttles.ThrottleRecord` of pre-run
values, computed with a dry-run writer, to the run folder *before* the first real write, then
applies: a task killed mid-write still leaves the record that lets the teardown restore, and a
record already on disk is extended, never replaced, so a retried task never mistakes our own
throttles for the user's. :data:`JANITOR_FILE` is where the teardown notes the throttles it keeps
while a wave of the run still copies (the final report reads it).

Failure: a non-positive or unreadable rate raises :class:`~kafka_zk.errors.InvalidInput` before any
write; the writes' own failures are :mod:`kafka_zk.admin.throttles`'.
"""

from __future__ import annotations

from typing import Any, Iterable

from kafka_zk.admin.throttles import ThrottleRecord, apply_throttles
from kafka_zk.throttle_lists import TopicThrottle
from kafka_zk.validation import parse_throttle
from kafka_zk.writer import ZkWriter
from procedures.run_folder import RunFolder

JANITOR_FILE = "throttle_janitor.json"


def resolve_rate(param: Any, planned: int | None) -> int:
    """The throttle rate: the run's Param, else the plan's, as :func:`kafka_zk.validation.parse_throttle` reads it."""
    return parse_throttle(planned if param in (None, "") else param, "throttle_bytes_per_sec")


def record_then_apply(folder: RunFolder, writer: ZkWriter, throttles: Iterable[TopicThrottle],
                      brokers: Iterable[int], rate: int | None) -> ThrottleRecord:
    """Save the extended pre-run record, then apply (see module docstring); returns the record."""
    throttles, brokers = list(throttles), list(brokers)
    previous = ThrottleRecord.load(folder.throttle_record) if folder.throttle_record.is_file() else None
    planner = writer.dry_twin()
    record = apply_throttles(planner, throttles, brokers, rate, record=previous)
    record.save(folder.throttle_record)
    apply_throttles(writer, throttles, brokers, rate, record=previous)
    return record
