"""The throttle rate a run uses and the record-then-apply of a wave's throttles (no Airflow).

:func:`record_then_apply` saves the extended :class:`ThrottleRecord` of pre-run values to the run
folder *before* the first real write (computed with a dry-run twin of the writer), so a task killed
mid-write still leaves the record that lets the teardown restore; a record already on disk is
extended, never replaced. The setup and teardown steps are in :mod:`operators.reassignment.throttles`.

Failure: a non-positive or unreadable rate raises :class:`kafka_zk.errors.InvalidInput` before any write.
"""

from __future__ import annotations

from typing import Any, Iterable

from kafka_zk.admin.throttles import ThrottleRecord, apply_throttles
from kafka_zk.throttle_lists import TopicThrottle
from kafka_zk.validation import parse_throttle
from kafka_zk.writer import ZkWriter
from procedures.run_folder import RunFolder


def resolve_rate(param: Any, planned: int | None) -> int:
    """The throttle rate: the run's Param, else the plan's, as :func:`kafka_zk.validation.parse_throttle` reads it."""
    return parse_throttle(planned if param in (None, "") else param, "throttle_bytes_per_sec")


def record_then_apply(folder: RunFolder, writer: ZkWriter, throttles: Iterable[TopicThrottle],
                      brokers: Iterable[int], rate: int | None):
    """Save the extended pre-run record, then apply (see module docstring); returns the record."""
    throttles, brokers = list(throttles), list(brokers)
    previous = ThrottleRecord.load(folder.throttle_record) if folder.throttle_record.is_file() else None
    planner = writer.dry_twin()
    record = apply_throttles(planner, throttles, brokers, rate, record=previous)
    record.save(folder.throttle_record)
    apply_throttles(writer, throttles, brokers, rate, record=previous)
    return record
