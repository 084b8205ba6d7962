"""``kafka-runbook plan`` caps a broker's moves per wave only when ``--max-moves-per-broker`` is
given (issue 38: the default of 5 made 4,856 waves at 1M partitions): without it the plan job gets
no cap, its waves are sized by bytes and the predicted time, and the printed summary says which
limits shaped them; with it, the cap is passed on and named."""

from __future__ import annotations

import argparse
import json
import os

from cli.main import main
from cli.plan import add_parser, job_argv
from formats.snapshot_file import write_snapshot
from formats.sizes_file import write_sizes_file
from spark_jobs.synthetic import synthetic_cluster, synthetic_sizes


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


def test_the_cap_reaches_the_plan_job_only_when_given() -> None:
    base = ["plan", "decommission", "--brokers", "3", "--snapshot", "s", "--out", "o"]
    assert "--max-moves-per-broker" not in job_argv(_parse(base), "snap.jsonl")
    argv = job_argv(_parse([*base, "--max-moves-per-broker", "7"]), "snap.jsonl")
    assert argv[argv.index("--max-moves-per-broker") + 1] == "7"


def test_the_printed_plan_says_what_shaped_its_waves(tmp_path, capsys) -> None:
    snap = synthetic_cluster(9, 3, 4, 30, 3, seed=4)
    write_snapshot(snap, str(tmp_path / "snap.jsonl"))
    write_sizes_file(synthetic_sizes(snap, seed=5), str(tmp_path / "sizes.jsonl"))
    base = ["plan", "decommission", "--brokers", "2", "--snapshot", str(tmp_path / "snap.jsonl"), "--sizes",
            str(tmp_path / "sizes.jsonl"), "--throttle", "50000000", "--engine", "driver"]
    assert main([*base, "--out", str(tmp_path / "free")]) == 0, capsys.readouterr().err
    free = capsys.readouterr().out
    assert main([*base, "--out", str(tmp_path / "capped"), "--max-moves-per-broker", "1"]) == 0
    capped = capsys.readouterr().out
    shaped = lambda out: next(line for line in out.splitlines() if line.startswith("Waves shaped: "))
    assert "no cap on moves per broker (none set)" in shaped(free)
    assert "the person's cap" in shaped(capped) and "the cap of 1 move(s) per broker per wave needs" in shaped(capped)
    summary = lambda name: json.load(open(os.path.join(tmp_path, name, "summary.json")))
    assert summary("free")["limits"]["max_moves_per_broker"] is None
    assert summary("capped")["limits"]["max_moves_per_broker"] == 1
    assert summary("free")["waves"] < summary("capped")["waves"]
