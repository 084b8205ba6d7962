"""``kafka-runbook state-change-logs`` in process: merge order, prefixes, filters, rotated and
gzip inputs, and bad input (one ``Error:`` line, exit 1, nothing written)."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from cli.main import main

B1 = """\
[2024-05-01 10:00:00,000] TRACE [Controller id=1 epoch=3] Changed partition orders-0 from NewPartition to OnlinePartition with state LeaderAndIsr(leader=1, leaderEpoch=0, isr=List(1, 2), zkVersion=0) (state.change.logger)
[2024-05-01 10:00:02,000] ERROR [Broker id=1] Error while processing LeaderAndIsr request correlationId 5 received from controller 1 epoch 3 for partition my-topic-12 (state.change.logger)
java.io.IOException: boom
\tat kafka.Foo.bar(Foo.scala:1)
[2024-05-01 10:00:03,000] TRACE [Controller id=1 epoch=3] Changed state of replica 2 for partition orders-1 from OnlineReplica to OfflineReplica (state.change.logger)
"""
B2_ROTATED = """\
[2024-05-01 09:59:59,999] TRACE [Broker id=2] Handling stop replica (delete=false) for partition orders-1 (state.change.logger)
[2024-05-01 10:00:02,000] TRACE [Broker id=2] Cached leader info UpdateMetadataPartitionState(topicName='orders', partitionIndex=0, controllerEpoch=3, leader=1, leaderEpoch=0, isr=[1, 2], zkVersion=0, replicas=[1, 2], offlineReplicas=[]) for partition orders-0 in response to UpdateMetadata request sent by controller 1 epoch 3 with correlation id 2 (state.change.logger)
"""


@pytest.fixture()
def logs(tmp_path: Path) -> Path:
    (tmp_path / "state-change.log").write_text(B1)
    with gzip.open(tmp_path / "state-change.log.2024-05-01-09.gz", "wt") as fh:
        fh.write(B2_ROTATED)
    return tmp_path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(["state-change-logs", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_rotated_gzip_and_plain_files_merge_by_time_with_file_prefixes(logs: Path, capsys) -> None:
    rc, out, err = run(capsys, "--logs-regex", f"{logs}/state-change.log.*")
    assert rc == 0
    p1, p2 = f"{logs}/state-change.log", f"{logs}/state-change.log.2024-05-01-09.gz"
    assert out.splitlines() == [
        f"{p2}: " + B2_ROTATED.splitlines()[0],
        f"{p1}: " + B1.splitlines()[0],
        f"{p1}: " + B1.splitlines()[1],      # same time as the next: the file found first goes first
        f"{p1}: java.io.IOException: boom",
        f"{p1}: \tat kafka.Foo.bar(Foo.scala:1)",
        f"{p2}: " + B2_ROTATED.splitlines()[1],
        f"{p1}: " + B1.splitlines()[4],
    ]
    assert "merged 5 of 5 entries from 2 file(s)" in err


def test_no_prefix_prints_the_bare_lines(logs: Path, capsys) -> None:
    rc, out, _ = run(capsys, "--logs", f"{logs}/state-change.log", "--no-prefix")
    assert rc == 0 and out == B1


def test_filters_topic_regex_partitions_and_time_range(logs: Path, capsys) -> None:
    files = f"{logs}/state-change.log,{logs}/state-change.log.2024-05-01-09.gz"
    _, out, _ = run(capsys, "--logs", files, "--topic", "ord.*", "--partitions", "1", "--no-prefix")
    assert out.splitlines() == [B2_ROTATED.splitlines()[0], B1.splitlines()[4]]
    _, out, _ = run(capsys, "--logs", files, "--topic", "my-topic", "--no-prefix")
    assert out.splitlines() == B1.splitlines()[1:4]
    _, out, _ = run(capsys, "--logs", files, "--start-time", "2024-05-01 10:00:00,000",
                    "--end-time", "2024-05-01 10:00:02,000", "--no-prefix")
    assert out.splitlines() == [B1.splitlines()[0], *B1.splitlines()[1:4], B2_ROTATED.splitlines()[1]]


def test_output_file_and_glob_in_logs(logs: Path, capsys, tmp_path: Path) -> None:
    target = tmp_path / "merged.txt"
    rc, out, _ = run(capsys, "--logs", f"{logs}/state-change.log*", "--output", str(target))
    assert rc == 0 and out == "" and target.read_text().count("\n") == 7


def test_orphan_lines_at_a_file_start_are_a_counted_warning(tmp_path: Path, capsys) -> None:
    f = tmp_path / "state-change.log.2024-05-01-11"
    f.write_text("\tat a.B(C.java:1)\n\tat d.E(F.java:2)\n" + B1)
    rc, out, err = run(capsys, "--logs", str(f), "--no-prefix")
    assert rc == 0 and out == B1
    assert "2 line(s) before the first timestamped entry skipped" in err


def _bad_cases(d: Path) -> list[tuple[list[str], str]]:
    ok = str(d / "state-change.log")
    (d / "empty-dir").mkdir()
    (d / "broken.gz").write_bytes(gzip.compress(B1.encode())[:40])
    os.symlink(d / "nowhere", d / "dangling")
    return [
        ([], "exactly one of"),
        (["--logs", ok, "--logs-regex", f"{d}/x"], "exactly one of"),
        (["--logs", ",,"], "names no file"),
        (["--logs", f"{d}/missing.log"], "does not exist"),
        (["--logs", str(d / "empty-dir")], "not a regular file"),
        (["--logs", str(d / "dangling")], "does not exist"),
        (["--logs", f"{ok},{d}/../{d.name}/state-change.log"], "given twice"),
        (["--logs", f"{d}/nomatch*"], "matches no file"),
        (["--logs-regex", f"{d}/nothing-like-this"], "matches no file"),
        (["--logs-regex", f"{d}/missing-dir/state.*"], "does not exist"),
        (["--logs-regex", f"{d}/state-change.log(["], "not a valid regex"),
        (["--logs", ok, "--topic", "("], "not a valid regex"),
        (["--logs", ok, "--partitions", "0"], "needs --topic"),
        (["--logs", ok, "--topic", "t", "--partitions", "0,0"], "repeated entries"),
        (["--logs", ok, "--topic", "t", "--partitions", "zero"], "not a partition id"),
        (["--logs", ok, "--start-time", "2024-05-01T10:00:00"], "not in the format"),
        (["--logs", ok, "--end-time", "2024-05-01 25:00:00,000"], "not a calendar time"),
        (["--logs", ok, "--start-time", "2024-05-02 00:00:00,000", "--end-time", "2024-05-01 00:00:00,000"],
         "is after"),
        (["--logs", ok, "--output", str(d / "empty-dir")], "is a directory"),
        (["--logs", ok, "--output", f"{d}/no/such/dir/out.txt"], "does not exist"),
        (["--logs", ok, "--spark-threshold", "-1"], "negative"),
        (["--logs", ok, "--reorder-window", "0"], "must be ≥ 1"),
        (["--logs", f"{ok},{d}/broken.gz", "--output", f"{d}/out.txt"], "cannot be read"),
    ]


def test_bad_input_is_one_clear_error_and_nothing_written(logs: Path, capsys) -> None:
    cases = _bad_cases(logs)
    assert len(cases) >= 15
    for argv, message in cases:
        rc, out, err = run(capsys, *argv)
        assert rc == 1, (argv, err)
        assert err.startswith("Error: ") and message in err and "Traceback" not in err, (argv, err)
        assert out == ""
        assert not (logs / "out.txt").exists()
        assert not [p for p in os.listdir(logs) if p.endswith(".tmp")]


def test_a_file_far_out_of_time_order_is_refused_in_process_and_sorted_with_a_wider_window(
        tmp_path: Path, capsys) -> None:
    f = tmp_path / "state-change.log"
    times = ["10:00:03", "10:00:04", "10:00:05", "10:00:00"]
    f.write_text("".join(f"[2024-05-01 {t},000] TRACE x\n" for t in times))
    rc, out, err = run(capsys, "--logs", str(f), "--reorder-window", "2", "--output", str(tmp_path / "o"))
    assert rc == 1 and "out of time order" in err and "--spark" in err
    assert not (tmp_path / "o").exists()
    rc, out, _ = run(capsys, "--logs", str(f), "--reorder-window", "3", "--no-prefix")
    assert rc == 0 and [line[12:20] for line in out.splitlines()] == sorted(times)


def test_a_reader_that_leaves_early_ends_the_merge_quietly(tmp_path: Path) -> None:
    import subprocess
    import sys

    f = tmp_path / "state-change.log"
    f.write_text(B1 * 20000)
    proc = subprocess.Popen([sys.executable, "-m", "cli.main", "state-change-logs", "--logs", str(f),
                             "--reorder-window", "100000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=Path(__file__).parents[2])
    assert proc.stdout.readline().startswith(str(f).encode())
    proc.stdout.close()                               # what `| head -1` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0 and "Error" not in err and "Traceback" not in err
