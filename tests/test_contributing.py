"""CONTRIBUTING.md stays true: every path, command, module and test id it names exists (the one
checker of tests/test_references.py), its table of the layers is tests/test_layers.py's FORBIDDEN
word for word, and its "add a runbook" recipe, walked on the most recent runbook added by following
it (the one the section names), names a real file of each kind the recipe asks for (the DAG, the procedure, the adapters, the contract filled, the guide, the
end-to-end and bad-input tests, the walks over every runbook)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_layers import FORBIDDEN, imports_of
from tests.test_references import unresolved_references

REPO = Path(__file__).resolve().parents[1]
TEXT = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
ROW = re.compile(r"^\| `([a-z_]+)/` \| (.+) \|$", re.MULTILINE)


def section(title: str) -> str:
    start = TEXT.index(f"## {title}")
    end = TEXT.find("\n## ", start + 1)
    return TEXT[start:end if end > 0 else None]


def test_every_path_command_module_and_test_it_names_exists() -> None:
    assert unresolved_references(TEXT) == []


def test_readme_links_it() -> None:
    assert "(CONTRIBUTING.md)" in (REPO / "README.md").read_text(encoding="utf-8")


def test_its_layer_table_is_what_test_layers_enforces() -> None:
    table = {layer: set(re.findall(r"`([a-z_]+)`", cells)) for layer, cells in ROW.findall(section("The layers"))}
    assert table == {layer: set(names) for layer, names in FORBIDDEN.items()}


def walked(runbook: str) -> dict[str, str]:
    rows = re.findall(r"^\| (.+?) \| `([^`]+)`.* \|$", section("How to add a runbook"), re.MULTILINE)
    return {kind: path for kind, path in rows if kind != "file kind" and path != f"{runbook}'s file"}


def test_the_runbook_recipe_walked_on_the_latest_runbook_names_a_real_file_of_every_kind() -> None:
    recipe = section("How to add a runbook")
    [runbook] = re.findall(r"The most recent one added this way is\s+`([a-z_]+)`", recipe)
    assert f"The recipe walked on `{runbook}`:" in recipe
    files = walked(runbook)
    assert set(files) == {"the DAG file", "the procedure", "its Airflow adapters", "the outcome contract filled",
                          "the guide", "the end-to-end `dag.test()` on the emulator", "the bad-input test",
                          "the walks over every runbook"}, sorted(files)
    text = {kind: (REPO / path).read_text(encoding="utf-8") for kind, path in files.items()}
    assert files["the DAG file"] == f"dags/{runbook}.py" and f'DAG_ID = "{runbook}"' in text["the DAG file"]
    assert files["the procedure"].startswith("procedures/")
    assert not {m for m in imports_of(REPO / files["the procedure"]) if m.split(".")[0] == "airflow"}
    assert files["its Airflow adapters"].startswith("operators/")
    assert re.search(r"class \w+\(.*OutcomeReportOperator\)", text["the outcome contract filled"])
    assert files["the guide"] == f"docs/runbooks/{runbook}.md"
    e2e = text["the end-to-end `dag.test()` on the emulator"]
    assert "run_dag" in e2e and runbook in e2e
    assert re.search(r"def test_bad_input\w*", text["the bad-input test"])
    assert '(REPO / "dags").glob("*.py")' in text["the walks over every runbook"]
    assert f"test_there_are_{len(list((REPO / 'dags').glob('[!_]*.py')))}_runbooks" in text["the walks over every runbook"]
