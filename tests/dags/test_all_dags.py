"""Every DAG file in dags/ loads with no import error, shows an SRE guide, has its guide in
docs/runbooks/, and describes every Param (the trigger form shows the descriptions)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_db")]
REPO = Path(__file__).resolve().parents[2]
DAG_FILES = sorted(p.stem for p in (REPO / "dags").glob("*.py") if p.stem != "__init__")


@pytest.fixture(scope="module")
def dagbag():
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(REPO / "dags"))


def test_every_dag_file_loads_without_an_import_error(dagbag) -> None:
    assert dagbag.import_errors == {}
    assert sorted(dagbag.dag_ids) == DAG_FILES, "each file in dags/ defines the DAG named after it"


@pytest.mark.parametrize("dag_id", DAG_FILES)
def test_every_param_has_a_description_and_the_guide_is_shown_and_written(dagbag, dag_id: str) -> None:
    dag = dagbag.get_dag(dag_id)
    assert dag.doc_md and len(dag.doc_md) > 200, f"{dag_id}: no doc_md SRE guide"
    assert (REPO / "docs" / "runbooks" / f"{dag_id}.md").is_file(), f"docs/runbooks/{dag_id}.md is missing"
    undescribed = [name for name in dag.params if not (dag.params.get_param(name).description or "").strip()]
    assert undescribed == [], f"{dag_id}: Params without a description: {undescribed}"


def test_each_runbooks_doc_md_is_its_guide_in_docs_runbooks(dagbag) -> None:
    """One guide per runbook: the UI's doc_md is exactly docs/runbooks/<dag>.md."""
    differ = {dag_id for dag_id in DAG_FILES
              if dagbag.get_dag(dag_id).doc_md != (REPO / "docs" / "runbooks" / f"{dag_id}.md").read_text(encoding="utf-8")}
    assert differ == set(), f"doc_md differs from docs/runbooks/<dag>.md for {sorted(differ)}"


def test_a_runbook_without_its_guide_is_an_import_error_naming_the_file() -> None:
    from operators.guides import runbook_guide

    with pytest.raises(FileNotFoundError, match=r"runbook 'no_such_dag' has no guide: write .*docs/runbooks/no_such_dag\.md"):
        runbook_guide("no_such_dag")


def test_the_health_guide_names_every_check_and_severity_the_dag_offers() -> None:
    """cluster_health's guide (its doc_md) is static text: it must keep up with the checks and severities."""
    from kafka_zk.health import CHECKS, SEVERITIES

    guide = (REPO / "docs" / "runbooks" / "cluster_health.md").read_text(encoding="utf-8")
    assert [c for c in CHECKS if f"`{c}`" not in guide] == []
    assert [s for s in SEVERITIES if f"`{s}`" not in guide] == []
    assert "KAFKA_HEALTH_INTERVAL_MINUTES" in guide
