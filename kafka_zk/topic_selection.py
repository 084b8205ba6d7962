"""Which topics an action names: a list of names and/or a regular expression, resolved on a snapshot.

The regular expression must match the *whole* topic name (``re.fullmatch``, as Kafka's ``--topic``
whitelist does). :func:`choose_topics` returns what was asked, what the expression matched and
which named topics do not exist; the caller decides what a missing topic means (the deletion
runbook refuses it among its other reasons, the election planner refuses the request).

Failure: :class:`InvalidInput` naming the input — names not given as a list, an expression that
does not compile, an expression that matches nothing while no name is given either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Collection

from kafka_zk.errors import InvalidInput


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


def compile_topic_regex(regex: str, what: str = "topic_regex") -> re.Pattern[str]:
    """``regex`` compiled, or :class:`InvalidInput` naming ``what`` and the compiler's complaint."""
    try:
        return re.compile(regex)
    except re.error as exc:
        raise InvalidInput(f"{what} {regex!r} is not a valid regular expression ({exc}): fix it") from None


def choose_topics(existing: Collection[str], topics: Any = (), regex: str | None = None,
                  what_topics: str = "topics", what_regex: str = "topic_regex") -> TopicChoice:
    """Resolve ``topics`` and ``regex`` against the ``existing`` topic names (see module docstring)."""
    if isinstance(topics, str):
        raise InvalidInput(f"{what_topics}={topics!r} must be a list of topic names, e.g. [\"orders\", \"payments\"]")
    requested = tuple(dict.fromkeys(str(t) for t in (topics or ())))
    text = (regex or "").strip()
    matched: tuple[str, ...] = ()
    if text:
        pattern = compile_topic_regex(text, what_regex)
        matched = tuple(t for t in sorted(existing) if pattern.fullmatch(t))
        if not matched and not requested:
            raise InvalidInput(f"{what_regex} {text!r} matches no topic of the cluster (it must match the whole "
                               "name, e.g. 'test-.*')")
    return TopicChoice(requested, text, matched, tuple(t for t in requested if t not in existing))
