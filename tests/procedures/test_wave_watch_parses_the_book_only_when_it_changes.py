"""The wave wait parses the run's ``waves.json`` once, not at every poll: it parses it again only when
the executor has replaced the file (procedures/waves/watch.py ``WaveWatch._book``), and a missing
file is still the clear error it was."""

from __future__ import annotations

import pytest

from kafka_zk.errors import KafkaZkError
from kafka_zk.codecs import TopicPartition
from procedures.run_folder import RunFolder
from procedures.waves import watch as watch_module
from procedures.waves.book import WaveBook, WaveMove, WaveSpec
from procedures.waves.watch import WaveWatch


def _book(status: str = "submitted") -> WaveBook:
    return WaveBook("h" * 64, (WaveSpec(0, (WaveMove(TopicPartition("t", 0), (1, 2), (3, 2), 10),), status=status,
                                        submitted_at="1.0"),))


class _Watch(WaveWatch):
    def __init__(self, run_dir: str) -> None:
        self._configure("run", 0, 1e12, run_dir)


def test_the_book_is_parsed_once_while_the_file_is_unchanged_and_again_once_replaced(tmp_path, monkeypatch) -> None:
    folder = RunFolder(tmp_path)
    _book().save(folder.wave_progress)
    parsed: list[str] = []
    load = WaveBook.load
    monkeypatch.setattr(watch_module.WaveBook, "load", classmethod(lambda cls, p: parsed.append(str(p)) or load(p)))
    w = _Watch(str(tmp_path))
    first = w._book()
    assert first == _book() and w._book() is first and w._book() is first
    assert len(parsed) == 1
    _book("done").save(folder.wave_progress)               # the executor replaces it (atomically)
    assert w._book().wave(0).status.value == "done"
    assert len(parsed) == 2


def test_a_missing_book_is_still_named_with_the_fix(tmp_path) -> None:
    w = _Watch(str(tmp_path))
    assert w._book() is None
    with pytest.raises(KafkaZkError, match="waves.json is missing.*re-run execute_waves"):
        w._poll()
    with pytest.raises(KafkaZkError, match="waves.json is missing.*re-run execute_waves"):
        w._diagnose()
