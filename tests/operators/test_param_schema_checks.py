"""cli.local_run.check_param_schemas_once: ``dag.test()`` checks each Param schema against its
metaschema once, with the same outcomes as ``jsonschema.validate``.

The library's own ``jsonschema.validators.validate`` is the reference: for any instance the
replacement raises the same error (or none), a bad schema is refused on every call, and the
runbook's serialized DAG is the same with and without it.
"""

from __future__ import annotations

import jsonschema
import pytest
from hypothesis import given, strategies as st
from jsonschema.validators import Draft202012Validator, validate as library_validate

from cli.local_run import check_param_schemas_once, validate_checking_each_schema_once

SCHEMAS = [
    {"type": "string", "enum": ["auto", "on", "off"]},
    {"type": ["null", "integer"], "minimum": 1},
    {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1, "uniqueItems": True},
    {"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["a"]},
    {"type": "number", "exclusiveMaximum": 100},
]
JSON = st.recursive(st.none() | st.booleans() | st.integers(-5, 200) | st.floats(allow_nan=False) | st.text(max_size=4)
                    | st.sampled_from(["auto", "on", "off"]),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b"]), inner,
                                                                                max_size=2), max_leaves=6)


def outcome(validate, instance, schema) -> str | None:
    try:
        validate(instance, schema)
    except jsonschema.ValidationError as err:
        return f"{err.message} at {list(err.absolute_path)} by {err.validator}"
    return None


@given(instance=JSON, schema=st.sampled_from(SCHEMAS))
def test_every_instance_gets_the_libraries_verdict_and_error(instance, schema) -> None:
    assert outcome(validate_checking_each_schema_once, instance, schema) == outcome(library_validate, instance, schema)


def test_a_schema_is_checked_once_and_a_bad_one_is_refused_every_time(monkeypatch) -> None:
    checks = []
    real_check = Draft202012Validator.check_schema.__func__

    def counting_check(cls, schema, *args):
        checks.append(schema)
        return real_check(cls, schema, *args)

    monkeypatch.setattr(Draft202012Validator, "check_schema", classmethod(counting_check))
    schema = {"type": "integer", "minimum": 7, "$schema": "https://json-schema.org/draft/2020-12/schema"}
    for _ in range(3):
        validate_checking_each_schema_once(8, schema)
    assert checks == [schema]
    bad = {"type": "nosuchtype", "$schema": "https://json-schema.org/draft/2020-12/schema"}
    for _ in range(2):
        with pytest.raises(jsonschema.SchemaError):
            validate_checking_each_schema_once(8, bad)
    assert checks == [schema, bad, bad]


def test_a_param_still_refuses_a_bad_value_and_the_runbook_serializes_the_same(monkeypatch) -> None:
    from airflow.sdk import Param
    from airflow.sdk.exceptions import ParamValidationError
    from airflow.serialization.serialized_objects import DagSerialization

    from cli.local_run import load_dag

    dag = load_dag("reassign_partitions")
    before = DagSerialization.to_dict(dag)
    monkeypatch.setattr(jsonschema, "validate", jsonschema.validate)     # restored after the test
    check_param_schemas_once()
    assert jsonschema.validate is validate_checking_each_schema_once
    assert DagSerialization.to_dict(dag) == before
    with pytest.raises(ParamValidationError, match="'sometimes' is not one of"):
        Param("auto", type="string", enum=["auto", "on", "off"]).resolve("sometimes")
