"""The trigger form stars as required only the Params a person must fill: those without a usable default.

Airflow 3.3.2's form (its UI bundle, ``airflow/ui/dist/assets/index-*.js``) marks a Param required
when ``!!schema.type && (!Array.isArray(schema.type) || !schema.type.includes("null"))``: a default
does not count, so every Param with one was starred (issue 36). :func:`UI_REQUIRED` is that rule;
each runbook's starred Params must be exactly those whose default is no value they accept, and a
Param with a default that a person empties (``null``) is refused by the run's first task, naming it.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from operators.approval.conf_check import UnknownConfKey, check_conf_keys
from cli.local_run import load_dag
from operators.runbook_dag import has_usable_default

REPO = Path(__file__).resolve().parents[2]
DAG_IDS = tuple(sorted(p.stem for p in (REPO / "dags").glob("*.py") if p.stem != "__init__"))


def ui_required(schema: dict) -> bool:
    """Airflow 3.3.2's form: is this Param starred as required?"""
    kind = schema.get("type")
    return bool(kind) and (not isinstance(kind, list) or "null" not in kind)


@pytest.mark.parametrize("dag_id", DAG_IDS)
def test_only_params_without_a_usable_default_are_starred(dag_id: str) -> None:
    dag = load_dag(dag_id)
    starred = {n for n in dag.params if ui_required(dag.params.get_param(n).schema)}
    must_fill = {n for n in dag.params if not has_usable_default(dag.params.get_param(n))
                 and ui_required(dag.params.get_param(n).schema)}
    assert starred == must_fill, (dag_id, sorted(starred - must_fill))
    for name in dag.params:                 # every default still passes its Param's own schema
        param = dag.params.get_param(name)
        if has_usable_default(param):
            assert param.resolve(param.value) == param.value


def test_the_required_fields_are_the_ones_a_person_types() -> None:
    starred = {d: sorted(n for n in load_dag(d).params if ui_required(load_dag(d).params.get_param(n).schema))
               for d in DAG_IDS}
    assert {d: s for d, s in starred.items() if s} == {
        "add_brokers": ["new_brokers"], "change_replication_factor": ["topics"],
        "decommission_brokers": ["brokers_to_remove"], "move_topics": ["brokers", "topics"],
        "reassign_partitions": ["reassignment_json"]}


def test_a_param_with_a_default_left_empty_is_refused_naming_it_and_its_default() -> None:
    dag = load_dag("delete_topics")
    context = {"dag": dag, "dag_run": SimpleNamespace(conf={"batch_size": None, "topic_regex": "tmp-.*"})}
    default = dag.params.get_param("batch_size").value
    with pytest.raises(UnknownConfKey, match=f"'batch_size' was left empty \\(its default is {default!r}\\)"):
        check_conf_keys(context)
    check_conf_keys({"dag": dag, "dag_run": SimpleNamespace(conf={"batch_size": default})})
