"""The CLI and the DAGs read broker ids, topic selections and throttles alike (issue 26).

For generated inputs, what ``kafka-runbook plan`` makes of a flag (its checks, then the plan job's
reading of the command line the CLI hands it) and what a runbook makes of the same value typed as
its Param (the Param check before the first task, then the plan step's job arguments and the plan
job) agree: the same value, or both refuse with the same text (only the input's name differs).
"""

from __future__ import annotations

import argparse
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cli.main import build_parser
from cli.plan import check_args, job_argv
from kafka_zk.errors import InputRefused
from kafka_zk.topic_selection import choose_topics
from operators.param_check import ParamRefused, check_param
from operators.plan.step import DecommissionPlanOperator
from spark_jobs import plan_job
from spark_jobs.operations import _brokers, _topics

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
EXISTING = ("orders", "orders.eu", "payments", "a", "ab", "test-1", "test_2", "__consumer_offsets")


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> tuple[str, str]:
    root = tmp_path_factory.mktemp("alike")
    (root / "snapshot.jsonl").write_text("{}\n")
    return str(root / "snapshot.jsonl"), str(root / "out")


def cli_args(files: tuple[str, str], *argv: str) -> argparse.Namespace:
    return build_parser("plan").parse_args(["plan", *argv, "--snapshot", files[0], "--out", files[1]])


def outcome(call) -> tuple[str, object]:
    """("ok", value) or ("refused", reason) — the input's name is left out of the comparison."""
    try:
        return "ok", call()
    except InputRefused as exc:
        return "refused", exc.reason


# -- broker ids ---------------------------------------------------------------------------------

def cli_brokers(files, text: str) -> list[int]:
    args = cli_args(files, "decommission", f"--brokers={text}")
    check_args(args)
    return sorted(_brokers(plan_job.parse_args(job_argv(args, files[0]))))


def dag_brokers(value: object) -> list[int]:
    check_param("brokers_to_remove", value)
    step = DecommissionPlanOperator(task_id="plan", spark_conn_id="spark_local", run_root="/nonexistent",
                                    brokers_to_remove=value)
    return sorted(_brokers(plan_job.parse_args(["--snapshot", "s", "--op", "decommission", "--out", "o",
                                                *step.job_args()])))


ID_TEXT = st.text(alphabet="0123456789-+, []\t²٣x", max_size=14)


@SETTINGS
@given(ID_TEXT)
@example("-1")
@example("04")
@example("4,4")
@example("4, 5, 4")
@example("[4, 5]")
@example("2147483648")
@example("--")
def test_broker_id_text_is_read_alike(files, text: str) -> None:
    assert outcome(lambda: cli_brokers(files, text)) == outcome(lambda: dag_brokers(text))


@SETTINGS
@given(st.lists(st.integers(min_value=-3, max_value=2**31 + 1) | st.sampled_from([0, 4, 4, 2**31 - 1]),
                max_size=5))
def test_a_list_param_is_read_as_its_comma_separated_text(files, ids: list[int]) -> None:
    assert outcome(lambda: cli_brokers(files, ",".join(map(str, ids)))) == outcome(lambda: dag_brokers(ids))


@pytest.mark.parametrize("text,reason", [
    ("-1", "'-1' is not a broker id"), ("04", "'04' is not a broker id"),
    ("4,4", "duplicate entries: 4; list each broker once"), ("4,5,4", "duplicate entries: 4; list each broker once")])
def test_the_four_broker_id_cases_are_refused_with_one_text(files, text: str, reason: str) -> None:
    with pytest.raises(InputRefused) as cli:
        cli_brokers(files, text)
    with pytest.raises(ParamRefused) as dag:
        dag_brokers(text if text != "4,5,4" else [4, 5, 4])
    assert cli.value.what == "--brokers" and dag.value.what == "brokers_to_remove"
    assert cli.value.reason == dag.value.reason and cli.value.reason.startswith(reason)


# -- topic selection ----------------------------------------------------------------------------

def cli_regex(files, text: str) -> tuple[str, ...]:
    args = cli_args(files, "delete-topics", f"--topic-regex={text}")
    check_args(args)
    job = plan_job.parse_args(job_argv(args, files[0]))
    return choose_topics(EXISTING, _topics(job, False), job.topic_regex).matched


def dag_regex(text: str) -> tuple[str, ...]:
    check_param("topic_regex", text)
    return choose_topics(EXISTING, [], text).matched      # what the select/plan steps do with the Param


REGEX_TEXT = st.text(alphabet="ab.*+?|,()[]\\ '\"-_ors1", min_size=1, max_size=10).filter(lambda t: t.strip())


@SETTINGS
@given(REGEX_TEXT)
@example("orders,payments")
@example("'orders.*'")
@example("(?P<x>a)")
@example("a[")
@example("test-.*, a")
def test_a_topic_regex_is_read_alike(files, text: str) -> None:
    assert outcome(lambda: cli_regex(files, text)) == outcome(lambda: dag_regex(text))


def test_a_comma_reads_as_or_in_the_cli_and_the_dags_as_in_kafkas_tools(files) -> None:
    assert cli_regex(files, "orders,payments") == dag_regex("orders,payments") == ("orders", "payments")


def cli_topics(files, names: list[str]) -> list[str]:
    args = cli_args(files, "change-rf", f"--topics={','.join(names)}", "--replication-factor", "2")
    check_args(args)
    return _topics(plan_job.parse_args(job_argv(args, files[0])))


def dag_topics(names: list[str]) -> list[str]:
    from operators.plan.topic_ops import check_topics

    check_param("topics", names)
    job_topics = check_topics(names)                  # what the change-rf plan step hands the job
    return _topics(argparse.Namespace(topics=",".join(job_topics), op="change-rf"))


TOPIC_NAME = st.text(alphabet=string.ascii_letters[:4] + "._- /é", min_size=1, max_size=6)


@SETTINGS
@given(st.lists(TOPIC_NAME | st.sampled_from([".", "..", "orders"]), min_size=1, max_size=4))
def test_topic_names_are_read_alike(files, names: list[str]) -> None:
    cli, dag = outcome(lambda: cli_topics(files, names)), outcome(lambda: dag_topics(names))
    if any(n != n.strip(" ") or n == "" for n in names):
        return      # spaces around a name typed on a command line are not part of it; a list item keeps them
    assert (cli[0], sorted(cli[1]) if cli[0] == "ok" else cli[1]) == (dag[0], dag[1])


# -- throttle -----------------------------------------------------------------------------------

def cli_throttle(files, text: str) -> int:
    args = cli_args(files, "decommission", "--brokers", "1", f"--throttle={text}")
    check_args(args)
    return plan_job.parse_args(job_argv(args, files[0])).throttle


def dag_throttle(value: object) -> int:
    from procedures.throttles import resolve_rate

    check_param("throttle_bytes_per_sec", value)
    return resolve_rate(value, None)      # what set_throttles, guards and the waves apply


@SETTINGS
@given(st.text(alphabet="0123456789-+._ eE", min_size=1, max_size=22) | st.integers(-2, 2**64).map(str))
@example("0")
@example("9223372036854775808")
@example("5_2")
@example("52.0")
def test_a_throttle_is_read_alike(files, text: str) -> None:
    cli, dag = outcome(lambda: cli_throttle(files, text)), outcome(lambda: dag_throttle(text))
    if cli[0] == "ok":
        cli = ("ok", int(cli[1]))
    assert cli == dag
