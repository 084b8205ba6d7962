"""The run folder: safe names from Airflow run ids, atomic JSON, clear errors on bad files."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_zk.errors import InvalidInput, InvalidPayload
from kafka_zk.files import read_json, write_json_atomic
from procedures.run_folder import RunFolder, safe_name


def test_run_ids_become_one_safe_directory_name(tmp_path: Path) -> None:
    assert safe_name("manual__2026-11-22T03:16:01.662427+00:00") == "manual__2026-11-22T03_16_01.662427_00_00"
    folder = RunFolder.for_run(tmp_path, "decommission_brokers", "scheduled__2026/../x").ensure()
    assert folder.root.parent == tmp_path / "decommission_brokers" and folder.root.is_dir()
    assert folder.snapshot.parent == folder.root and folder.plan_dir == folder.root / "plan"
    with pytest.raises(InvalidInput):
        safe_name("  ")
    with pytest.raises(InvalidInput):
        RunFolder.for_run("", "d", "r")


def test_json_is_written_atomically_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b.json"
    write_json_atomic(path, {"x": [1, 2]})
    assert read_json(path) == {"x": [1, 2]}
    assert [p.name for p in path.parent.iterdir()] == ["b.json"]  # no temporary file left
    assert read_json(tmp_path / "missing.json") is None
    path.write_text("{half", encoding="utf-8")
    with pytest.raises(InvalidPayload) as err:
        read_json(path)
    assert "b.json" in str(err.value)
