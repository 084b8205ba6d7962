"""Which topics an action names: a list of names and/or a regular expression, resolved on a snapshot.

Both inputs are read by :mod:`kafka_zk.validation` (:func:`~kafka_zk.validation.parse_topic_names`,
:func:`~kafka_zk.validation.parse_topic_regex`: Kafka's ``--topic`` rule, ',' read as '|', the
expression matching the *whole* topic name), the same as the CLI reads them. :func:`choose_topics`
returns what was asked, what the expression matched and which named topics do not exist; the
caller decides what a missing topic means (the deletion
runbook refuses it among its other reasons, the election planner refuses the request).

Failure: :class:`InputRefused` naming the input — an illegal or repeated name, an expression that
does not compile, an expression that matches nothing while no name is given either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Collection

from kafka_zk.errors import InputRefused
from kafka_zk.validation import parse_topic_names, parse_topic_regex


@dataclass(frozen=True)
class TopicChoice:
    """Names as given (deduplicated, in order), the expression, what it matched (sorted), the missing names."""

    requested: tuple[str, ...]
    regex: str
    matched: tuple[str, ...]
    missing: tuple[str, ...]

    @property
    def names(self) -> tuple[str, ...]:
        """Every topic named or matched, each once: the names first, then the matches."""
        return tuple(dict.fromkeys(self.requested + self.matched))


def choose_topics(existing: Collection[str], topics: Any = (), regex: str | None = None,
                  what_topics: str = "topics", what_regex: str = "topic_regex") -> TopicChoice:
    """Resolve ``topics`` and ``regex`` against the ``existing`` topic names (see module docstring)."""
    requested = tuple(parse_topic_names(topics, what_topics))
    pattern = parse_topic_regex(regex, what_regex)
    matched: tuple[str, ...] = ()
    if pattern is not None:
        matched = tuple(t for t in sorted(existing) if pattern.fullmatch(t))
        if not matched and not requested:
            raise InputRefused(what_regex, f"{str(regex).strip()!r} matches no topic of the cluster (it must match "
                                           "the whole name, e.g. 'test-.*')")
    return TopicChoice(requested, pattern.pattern if pattern is not None else "", matched,
                       tuple(t for t in requested if t not in existing))
