"""`kafka-runbook plan` hands each operation's flags to the plan job unchanged (the rollback op's
source included), and refuses a rollback without exactly one source."""

from __future__ import annotations

import argparse

import pytest

from cli.plan import add_parser, job_argv


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


def test_rollback_passes_the_run_to_undo_to_the_plan_job() -> None:
    args = parse(["plan", "rollback", "--rollback-from", "runs/decommission_brokers/r1/plan", "--snapshot", "s",
                  "--out", "o"])
    argv = job_argv(args, "snap.jsonl")
    assert argv[argv.index("--op") + 1] == "rollback"
    assert "--rollback-from=runs/decommission_brokers/r1/plan" in argv
    assert not [a for a in argv if a.startswith("--reassignment-json-file")]


def test_a_value_that_starts_with_a_dash_reaches_the_plan_job_whole() -> None:
    from spark_jobs.plan_job import parse_args

    args = parse(["plan", "change-rf", "--topics=-orders,b", "--replication-factor", "2", "--snapshot", "s",
                  "--out", "o"])
    assert parse_args(job_argv(args, "snap.jsonl")).topics == "-orders,b"


def test_rollback_needs_exactly_one_source(capsys) -> None:
    for argv in (["plan", "rollback", "--snapshot", "s", "--out", "o"],
                 ["plan", "rollback", "--rollback-from", "a", "--reassignment-json-file", "b", "--snapshot", "s",
                  "--out", "o"]):
        with pytest.raises(SystemExit):
            parse(argv)
    assert "--rollback-from" in capsys.readouterr().err
