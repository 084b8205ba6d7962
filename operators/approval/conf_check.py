"""The trigger's conf holds only the runbook's Params, none emptied: else the run's first task fails.

Airflow accepts any key in a run's conf and ignores those that are not Params, so a misspelt
option (``dryrun``), or an attempt to skip a step (``skip_approval``, ``PRE_APPROVED``), would
silently do nothing — or, worse, make the person who typed it believe it did something.
:func:`check_conf_keys` runs before every task of every runbook (the ``pre_execute`` hook that
:func:`operators.runbook_dag.runbook_dag` gives each task), so the run's first task fails on it,
before any work: the message names each unknown key, the nearest Param where one is close, and the
Params the runbook takes. The removed ``pre_approved`` switch (in any spelling) is refused with
the same explanation as at the approval step. A Param with a default is optional in the trigger
form (:func:`operators.runbook_dag.optional_when_defaulted`), so a person may clear its field: a
``null`` for it is refused the same way, naming the Param and its default.

Failure: :class:`UnknownConfKey` (an :class:`~airflow.sdk.exceptions.AirflowFailException`: not
retried); nothing has been read or written when it is raised.
"""

from __future__ import annotations

import difflib
from typing import Any, Iterable, Mapping

from airflow.sdk.exceptions import AirflowFailException

from kafka_zk.errors import InvalidInput
from procedures.approval.policy import REMOVED_PARAM

BYPASS_WORDS = ("approv", "skip", "bypass", "force")


class UnknownConfKey(InvalidInput, AirflowFailException):
    """The run's conf names a key that is not a Param of the runbook."""


def unknown_keys_message(conf: Mapping[str, Any], params: Iterable[str], dag_id: str) -> str | None:
    """Why ``conf`` is refused (``None``: every key is a Param)."""
    known = sorted(params)
    unknown = sorted(k for k in conf if k not in known)
    if not unknown:
        return None
    parts = []
    for key in unknown:
        folded = key.strip().lower().replace("-", "_")
        if folded == REMOVED_PARAM or any(w in folded for w in BYPASS_WORDS):
            parts.append(f"{key!r}: there is no trigger-time way to skip the approval ({REMOVED_PARAM} was removed); "
                         "only the maintenance-windows policy pre-approves, for scheduled runs "
                         "(docs/maintenance-windows.md)")
            continue
        near = difflib.get_close_matches(folded, known, n=1, cutoff=0.6)
        parts.append(f"{key!r}: not a Param of {dag_id}" + (f" (did you mean {near[0]!r}?)" if near else ""))
    return (f"unknown conf key(s) for {dag_id}: " + "; ".join(parts) + f". The Params are: {', '.join(known)}. "
            "Trigger again without them; nothing was done")


def emptied_params_message(conf: Mapping[str, Any], defaults: Mapping[str, Any], dag_id: str) -> str | None:
    """Why ``conf`` is refused when it empties (``null``) a Param that has a default (``defaults``: those
    Params' defaults; the trigger form lets such a field be cleared), else ``None``."""
    emptied = sorted(k for k in conf if k in defaults and conf[k] is None)
    if not emptied:
        return None
    return (f"{dag_id}: " + "; ".join(f"{k!r} was left empty (its default is {defaults[k]!r})" for k in emptied)
            + ". Trigger again with a value, or leave the field as the form fills it; nothing was done")


def check_conf_keys(context: Mapping[str, Any]) -> None:
    """The ``pre_execute`` hook: raise :class:`UnknownConfKey` when the run's conf has a non-Param key,
    or empties a Param that has a default (:func:`operators.runbook_dag.optional_when_defaulted`)."""
    dag_run, dag = context.get("dag_run"), context.get("dag")
    conf = getattr(dag_run, "conf", None) or {}
    if dag is None or not isinstance(conf, Mapping):
        return
    message = unknown_keys_message(conf, dag.params.keys(), dag.dag_id)
    if message is None:
        names = getattr(dag, "never_empty_params", frozenset())
        message = emptied_params_message(conf, {n: dag.params.get_param(n).value for n in names
                                                if n in dag.params}, dag.dag_id)
    if message is not None:
        raise UnknownConfKey(message)
