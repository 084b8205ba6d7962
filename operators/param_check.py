"""The runbooks' Params that name brokers, topics, a throttle or a byte budget, read by the CLI's parsers.

Airflow checks a run's Params against their JSON schemas when the run is triggered (types, a form
that can be filled); what a value *means* is decided by :mod:`kafka_zk.validation`, one parser
per input, the same functions the CLI and the plan job call. So ``4,4``, ``04`` or ``-1`` typed
as ``brokers_to_remove`` is refused with the text ``kafka-runbook plan decommission --brokers``
gives for it, only the input's name differs. :func:`check_params` runs in the ``pre_execute``
hook of every runbook task (:func:`operators.runbook_dag.before_each_task`), so the run's first
task fails on a bad value before anything is read or written; the steps read the same Params
with the same parsers.

Failure: :class:`ParamRefused` (the parser's :class:`~kafka_zk.errors.InputRefused`, and an
:class:`~airflow.sdk.exceptions.AirflowFailException`: a retry would refuse it again).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from airflow.sdk.exceptions import AirflowFailException

from kafka_zk.errors import InputRefused
from kafka_zk.validation import parse_broker_ids, parse_size, parse_throttle, parse_topic_names, parse_topic_regex

#: Param name → the parser that reads it (values meaning "not given" are left to the step: :func:`_not_given`).
PARSERS: dict[str, Callable[[Any, str], object]] = {
    "brokers_to_remove": parse_broker_ids,
    "new_brokers": parse_broker_ids,
    "brokers": parse_broker_ids,
    "throttle_bytes_per_sec": parse_throttle,
    "topics": parse_topic_names,
    "topic_regex": parse_topic_regex,
    "max_bytes_moved": parse_size,
    "replace_with": lambda value, name: [] if value in ([], "[]") else parse_broker_ids(value, name),   # [] = not given
}


def _not_given(value: Any) -> bool:
    """A value a Param uses for "not given" or "every broker": None, blank text, ``all`` (rolling_restart's
    ``brokers``); the step decides what it means, and refuses it, if at all, with the same parser."""
    return value is None or (isinstance(value, str) and value.strip() in ("", "all")) or value == ["all"]


class ParamRefused(InputRefused, AirflowFailException):
    """A Param value its input's parser refuses; the text is the parser's."""


def check_param(name: str, value: Any) -> object:
    """``value`` of Param ``name`` as its parser reads it (``value`` itself for a Param without one)."""
    parser = PARSERS.get(name)
    if parser is None or _not_given(value):
        return value
    try:
        return parser(value, name)
    except InputRefused as exc:
        raise ParamRefused(exc.what, exc.reason) from None


def check_params(params: Mapping[str, Any]) -> None:
    """Every Param of a run that names brokers, topics, a throttle or a byte budget, in name order."""
    for name in sorted(params):
        check_param(name, params[name])


def check_run_params(context: Mapping[str, Any]) -> None:
    """The ``pre_execute`` hook's part: :func:`check_params` on the run's resolved Params."""
    params = context.get("params")
    if isinstance(params, Mapping):
        check_params(params)
