"""``kafka-replica-verification.sh``'s options as a checked :class:`VerifyOptions`.

Same names and defaults as Kafka 2.4.1's ReplicaVerificationTool: ``--broker-list`` (required),
``--topic-white-list`` (a Java-style regex, default ``.*``; commas mean "or", quotes and spaces
are dropped, the whole topic name must match, as Kafka's ``Whitelist``), ``--fetch-size``
(1 MiB), ``--max-wait-ms`` (1000), ``--time`` (−1 latest, −2 earliest, or a timestamp in ms),
``--report-interval-ms`` (30000).

Failure: a bad value raises :class:`InvalidOption` naming the option, the value and the fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kafka_zk.errors import InputRefused
from kafka_zk.validation import parse_topic_regex
from replica_verify.errors import InvalidOption

DEFAULT_FETCH_SIZE = 1024 * 1024        # ConsumerConfig.DEFAULT_MAX_PARTITION_FETCH_BYTES
DEFAULT_MAX_WAIT_MS = 1000
DEFAULT_REPORT_INTERVAL_MS = 30_000
LATEST, EARLIEST = -1, -2


@dataclass(frozen=True)
class VerifyOptions:
    brokers: tuple[tuple[str, int], ...]
    topic_pattern: re.Pattern[str]
    fetch_size: int = DEFAULT_FETCH_SIZE
    max_wait_ms: int = DEFAULT_MAX_WAIT_MS
    time: int = LATEST
    report_interval_ms: int = DEFAULT_REPORT_INTERVAL_MS

    @property
    def socket_timeout_s(self) -> float:
        """How long a broker may take to accept or answer: the fetch's own wait plus as much
        again (at least 1 s) — a dead or hung broker is an error within this bound."""
        wait = self.max_wait_ms / 1000.0
        return wait + max(1.0, wait)


def parse_broker_list(text: str) -> tuple[tuple[str, int], ...]:
    """``host:port,host:port`` to pairs."""
    out = []
    for item in (text or "").split(","):
        item = item.strip()
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise InvalidOption(f"--broker-list {text!r}: {item!r} is not host:port; write e.g. "
                                "--broker-list kafka1:9092,kafka2:9092")
        out.append((host.strip("[]"), int(port)))
    return tuple(out)


def compile_whitelist(regex: str) -> re.Pattern[str]:
    """Kafka's ``Whitelist``, read as every topic expression of the project is
    (:func:`kafka_zk.validation.parse_topic_regex`: commas become alternatives, quotes and spaces go,
    full match); a blank one matches nothing, as Kafka's empty regex."""
    try:
        pattern = parse_topic_regex(regex, "--topic-white-list")
    except InputRefused as exc:
        raise InvalidOption(str(exc)) from None
    return pattern if pattern is not None else re.compile(r"(?!)")


def build_options(broker_list: str, topic_white_list: str = ".*", fetch_size: int = DEFAULT_FETCH_SIZE,
                  max_wait_ms: int = DEFAULT_MAX_WAIT_MS, time: int = LATEST,
                  report_interval_ms: int = DEFAULT_REPORT_INTERVAL_MS) -> VerifyOptions:
    """Checked options; raises :class:`InvalidOption` on the first bad one."""
    if not isinstance(fetch_size, int) or fetch_size <= 0:
        raise InvalidOption(f"--fetch-size {fetch_size!r} must be a positive number of bytes "
                            f"(default {DEFAULT_FETCH_SIZE})")
    if not isinstance(max_wait_ms, int) or max_wait_ms <= 0:
        raise InvalidOption(f"--max-wait-ms {max_wait_ms!r} must be a positive number of ms "
                            f"(default {DEFAULT_MAX_WAIT_MS})")
    if not isinstance(time, int) or time < EARLIEST:
        raise InvalidOption(f"--time {time!r} must be -1 (latest), -2 (earliest) or a timestamp in ms ≥ 0")
    if not isinstance(report_interval_ms, int) or report_interval_ms < 0:
        raise InvalidOption(f"--report-interval-ms {report_interval_ms!r} must be ≥ 0 ms "
                            f"(default {DEFAULT_REPORT_INTERVAL_MS})")
    return VerifyOptions(parse_broker_list(broker_list), compile_whitelist(topic_white_list),
                         fetch_size, max_wait_ms, time, report_interval_ms)
