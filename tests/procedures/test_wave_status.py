"""A wave's status is a WaveStatus with one transition table, changed only through WaveBook.advance,
stamped with the caller's clock; the executor stamps with its injectable clock."""

from __future__ import annotations

import json

import pytest

from kafka_zk.codecs import TopicPartition
from procedures.waves.book import ALLOWED, IllegalWaveTransition, WaveBook, WaveMove, WaveSpec, WaveStatus

TP = TopicPartition("t", 0)


def _book() -> WaveBook:
    return WaveBook("h" * 64, tuple(WaveSpec(i, (WaveMove(TopicPartition("t", i), (1, 2), (3, 2), 10),))
                                    for i in range(2)))


def test_every_arrow_of_the_table_is_allowed_and_every_other_one_refused() -> None:
    for start in WaveStatus:
        for to in WaveStatus:
            wave = WaveSpec(0, (WaveMove(TP, (1,), (2,)),), status=start)
            if to in ALLOWED[start]:
                assert wave.advance(to, 1.0).status is to
            else:
                with pytest.raises(IllegalWaveTransition, match=f"{start.value} -> {to.value} is not allowed"):
                    wave.advance(to, 1.0)


def test_the_book_changes_one_wave_at_the_callers_time_and_round_trips_through_its_file(tmp_path) -> None:
    book = _book().advance(1, WaveStatus.SUBMITTED, 100.0).advance(1, WaveStatus.DONE, 160.0)
    assert [w.status for w in book.waves] == [WaveStatus.PENDING, WaveStatus.DONE]
    assert (book.wave(1).submitted_at, book.wave(1).done_at) == (100.0, 160.0)
    book.save(tmp_path / "waves.json")
    assert json.loads((tmp_path / "waves.json").read_text())["waves"][1]["status"] == "done"
    again = WaveBook.load(tmp_path / "waves.json")
    assert again == book and again.wave(1).status is WaveStatus.DONE
    with pytest.raises(IllegalWaveTransition):
        again.advance(1, WaveStatus.SUBMITTED, 200.0)


def test_an_unknown_status_in_the_file_is_refused_naming_the_file(tmp_path) -> None:
    from kafka_zk.errors import InvalidPayload

    doc = _book().to_json()
    doc["waves"][0]["status"] = "running"
    with pytest.raises(InvalidPayload, match="bad.json: not a wave progress file"):
        WaveBook.from_json(doc, "bad.json")


def test_the_executor_stamps_status_changes_with_its_clock(tmp_path) -> None:
    from types import SimpleNamespace

    from operators.reassignment.execute import ExecuteWavesOperator

    op = ExecuteWavesOperator(task_id="execute_waves", zk_conn_id="z", run_root=str(tmp_path))
    op.clock = lambda: 1234.5
    executor = op._executor({"dag": SimpleNamespace(dag_id="decommission_brokers"), "run_id": "run"})
    folder = executor.folder
    book = executor._advance_wave(_book(), 0, WaveStatus.SUBMITTED)
    assert book.wave(0).submitted_at == 1234.5
    assert WaveBook.load(folder.wave_progress).wave(0).status is WaveStatus.SUBMITTED
