"""The Spark state-change log merge writes the same bytes as the in-process merge.

One multi-file input exercises what could make the two paths differ: files read in many small
byte-range splits (entries and stack traces crossing split boundaries), gzip files read whole,
equal times across files (file order breaks the tie), small time inversions inside a file,
CRLF line ends, invalid UTF-8, lines before a file's first entry. Two Spark runs (with and
without filters) on the session shared by the plan tests.
"""

from __future__ import annotations

import gzip
import io
import random
from pathlib import Path

import pytest

from formats.state_change_files import find_logs, write_merged
from formats.state_change_log import MergeStats, compile_filter
from spark_jobs.state_change_job import merge_with_spark, splits

pytestmark = pytest.mark.spark


def _write_inputs(d: Path) -> str:
    rng = random.Random(7)
    paths = []
    for b in range(1, 5):
        buf = io.BytesIO()
        if b == 2:
            buf.write(b"\tat orphan.Line(X.java:1)\n")
        sec = 0
        for i in range(400):
            sec += rng.choice((0, 0, 1, 2))
            ms = rng.choice((0, 0, 500))                 # many equal times across files
            t = f"2024-05-01 10:{sec // 60 % 60:02d}:{sec % 60:02d},{ms:03d}"
            if i % 37 == 5:                              # a small inversion in the file
                t = f"2024-05-01 10:{max(sec - 1, 0) // 60 % 60:02d}:{max(sec - 1, 0) % 60:02d},{ms:03d}"
            tp = f"{rng.choice(('orders', 'my-topic', 'old.v2'))}-{rng.randrange(6)}"
            line = (f"[{t}] TRACE [Controller id={b} epoch=3] Changed partition {tp} from OnlinePartition "
                    f"to OnlinePartition with state LeaderAndIsr(leader={b}, leaderEpoch={i}, "
                    f"isr=List({b}), zkVersion={i}) (state.change.logger)")
            end = b"\r\n" if i % 11 == 0 else b"\n"
            buf.write(line.encode() + end)
            if i % 13 == 0:
                buf.write(b"java.io.IOException: \xff\xfe broken bytes\n\tat kafka.A.b(A.scala:1)\n\tat kafka.C.d(C.scala:2)\n")
        name = d / f"broker-{b}.state-change.log"
        if b == 3:
            name = d / "broker-3.state-change.log.2024-05-01-09.gz"
            name.write_bytes(gzip.compress(buf.getvalue()))
        else:
            name.write_bytes(buf.getvalue())
        paths.append(str(name))
    return ",".join(paths)


def _in_process(logs, flt, out: Path) -> MergeStats:
    with open(out, "w", encoding="utf-8", newline="\n") as fh:
        return write_merged(logs, flt, fh, prefix=True, reorder_window=64)


@pytest.mark.parametrize("filters", [{}, {"topic": "ord.*|old\\.v2", "partitions": "0,3,5",
                                          "start": "2024-05-01 10:01:00,000", "end": "2024-05-01 10:09:00,500"}],
                         ids=["all", "filtered"])
def test_spark_merge_is_byte_for_byte_the_in_process_merge(spark, tmp_path: Path, filters: dict) -> None:
    logs = find_logs(_write_inputs(tmp_path))
    assert len(splits(logs, 997)) > 40                   # many splits: boundaries inside entries
    flt = compile_filter(**filters)
    local = _in_process(logs, flt, tmp_path / "local.txt")
    # unfiltered: one sorted partition; filtered: a range-partitioned sort over several
    stats = merge_with_spark(logs, flt, str(tmp_path / "spark.txt"), split_bytes=997, spark=spark,
                             sorted_partition_bytes=20_000 if filters else 1 << 30)
    expected = (tmp_path / "local.txt").read_bytes()
    assert len(expected) > 10_000 and b"\xef\xbf\xbd" in expected      # invalid bytes replaced
    assert (tmp_path / "spark.txt").read_bytes() == expected
    assert stats.written == local.written and stats.warnings() == local.warnings()
    assert {k: (v.orphan_lines, v.entries) for k, v in stats.per_file.items()} == \
        {k: (v.orphan_lines, v.entries) for k, v in local.per_file.items()}
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_cli_uses_spark_above_the_threshold_with_the_same_output(spark, tmp_path: Path, capsys) -> None:
    from cli.main import main

    files = _write_inputs(tmp_path)
    assert main(["state-change-logs", "--logs", files, "--reorder-window", "64"]) == 0
    local = capsys.readouterr()
    assert "with Spark" not in local.err
    assert main(["state-change-logs", "--logs", files, "--spark-threshold", "0"]) == 0
    remote = capsys.readouterr()
    assert "with Spark" in remote.err and remote.out == local.out
    assert "1 line(s) before the first timestamped entry skipped" in remote.err
