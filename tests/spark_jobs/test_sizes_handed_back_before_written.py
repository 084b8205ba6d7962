"""``kafka-runbook plan --zookeeper``'s sizes child hands the checked sizes back before it writes the
staged ``sizes.jsonl`` (:func:`spark_jobs.sizes_input.start`): the plan goes on while the file is
written, and the file kept with the plan is complete whatever the child did — written by it, or,
when its write failed, by the plan's process; a bad file is refused as :func:`prepare` refuses it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from kafka_zk.codecs import TopicPartition
from kafka_zk.errors import InvalidPayload
from kafka_zk.log_dirs import encode_log_dirs, log_dirs_columns
from spark_jobs import sizes_input


def _log_dirs(tmp_path: Path) -> Path:
    sizes = {1: {TopicPartition("orders", p): 1000 + p for p in range(50)},
             2: {TopicPartition("orders", p): 2000 + p for p in range(25)}}
    path = tmp_path / "log-dirs.txt"
    path.write_text(encode_log_dirs(sizes))
    return path


def test_the_sizes_come_back_before_the_staged_file_is_written_and_the_file_kept_is_the_same(
        tmp_path: Path, monkeypatch) -> None:
    src = _log_dirs(tmp_path)
    expected = tmp_path / "expected"
    sizes_input.finish(sizes_input.prepare(str(src), str(expected)), succeeded=True)
    go, parent, real = tmp_path / "go", os.getpid(), sizes_input.write_sizes_file

    def held(columns, path):           # the child's write waits until the parent has the sizes
        if os.getpid() != parent:
            deadline = time.monotonic() + 20
            while not go.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
        return real(columns, path)
    monkeypatch.setattr(sizes_input, "write_sizes_file", held)
    pending = sizes_input.start(str(src), str(tmp_path / "out"))
    got = pending.result()
    assert got.columns == log_dirs_columns(src.read_bytes()) and got.form == "log_dirs" and got.partitions == 50
    assert not Path(got.path).exists()             # handed back first: the write waits for `go`
    go.touch()
    sizes_input.finish(got, succeeded=True)
    assert (tmp_path / "out" / "sizes.jsonl").read_bytes() == (expected / "sizes.jsonl").read_bytes()
    assert sorted(os.listdir(tmp_path / "out")) == ["sizes.jsonl"]


def test_a_child_whose_write_failed_leaves_the_plan_process_to_write_the_file(tmp_path: Path, monkeypatch) -> None:
    src = _log_dirs(tmp_path)
    parent, real = os.getpid(), sizes_input.write_sizes_file

    def failing_in_the_child(columns, path):
        if os.getpid() != parent:
            raise OSError(28, "No space left on device")
        return real(columns, path)
    monkeypatch.setattr(sizes_input, "write_sizes_file", failing_in_the_child)
    got = sizes_input.start(str(src), str(tmp_path / "out")).result()
    sizes_input.finish(got, succeeded=True)
    lines = (tmp_path / "out" / "sizes.jsonl").read_text().splitlines()
    assert len(lines) == 51 and '"partition":49,"size":1049' in lines[-1]


def test_a_failed_plan_removes_the_staged_file_once_the_child_wrote_it(tmp_path: Path) -> None:
    got = sizes_input.start(str(_log_dirs(tmp_path)), str(tmp_path / "out")).result()
    sizes_input.finish(got, succeeded=False)
    assert not (tmp_path / "out").exists()         # created for the plan, removed with it


def test_a_file_in_neither_form_is_refused_as_prepare_refuses_it(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("not sizes\n")
    pending = sizes_input.start(str(bad), str(tmp_path / "out"))
    with pytest.raises(InvalidPayload, match="sizes file .*bad.txt: neither a partition sizes file"):
        pending.result()
    assert isinstance(pending.exception(), InvalidPayload)
    assert not (tmp_path / "out").exists()
