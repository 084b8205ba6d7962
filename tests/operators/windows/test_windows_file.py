"""The maintenance-windows file: a good file parses exactly; each malformed one is refused with
the line that is wrong and the fix (and so no policy from it ever applies)."""

from __future__ import annotations

import textwrap
from datetime import timedelta

import pytest

from procedures.windows.spec import WindowsFileError, load_windows_file, parse_windows_text, windows_file_path

GOOD = """\
clusters:
  kafka_zookeeper_default:
    windows:
      - name: tue-thu-night
        start: "0 1 * * 2,4"
        duration: 4h
        timezone: Europe/Berlin
        runbooks: [decommission_brokers, preferred_leader_election]
      - name: sunday
        start: "30 2 * * 0"
        duration: 1h30m
        timezone: UTC
        runbooks: ["*"]
    pre_approval:
      runbooks: [preferred_leader_election]
      max_replicas_moved: 200
      max_bytes_moved: 50GiB
  other_cluster:
    windows:
      - name: daily
        start: "0 3 * * *"
        duration: 2h
        timezone: America/New_York
        runbooks: [delete_topics]
"""


def test_a_good_file_parses_every_field():
    f = parse_windows_text(GOOD, "w.yaml")
    c = f.cluster("kafka_zookeeper_default")
    assert [w.name for w in c.windows] == ["tue-thu-night", "sunday"]
    night = c.windows[0]
    assert (night.start, night.duration, night.timezone) == ("0 1 * * 2,4", timedelta(hours=4), "Europe/Berlin")
    assert night.admits("decommission_brokers") and not night.admits("delete_topics")
    assert c.windows[1].duration == timedelta(hours=1, minutes=30) and c.windows[1].admits("anything")
    p = c.pre_approval
    assert (p.runbooks, p.max_replicas_moved, p.max_bytes_moved, p.require_rehearsal) == \
        (("preferred_leader_election",), 200, 50 << 30, True)
    assert f.cluster("other_cluster").pre_approval is None and f.cluster("nope") is None
    assert len(f.sha256) == 64


def test_the_file_hash_is_the_hash_of_its_bytes(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(GOOD)
    first = load_windows_file(path).sha256
    path.write_text(GOOD.replace("200", "201"))
    assert load_windows_file(path).sha256 != first


def test_expiry_and_approvers_are_read_and_default_to_twelve_hours_and_anyone():
    plain = parse_windows_text(_window(), "w.yaml").cluster("c1")
    assert plain.approval_expires_after == timedelta(hours=12) and plain.approvers == ()
    c = parse_windows_text(_window() + "    approval_expires_after: 1h30s\n    approvers: [alice, bob]\n",
                           "w.yaml").cluster("c1")
    assert c.approval_expires_after == timedelta(hours=1, seconds=30) and c.approvers == ("alice", "bob")


def test_the_variable_wins_over_the_environment():
    assert windows_file_path("/etc/a.yaml", {"KAFKA_RUNBOOKS_WINDOWS_FILE": "/etc/b.yaml"}) == "/etc/a.yaml"
    assert windows_file_path(None, {"KAFKA_RUNBOOKS_WINDOWS_FILE": "/etc/b.yaml"}) == "/etc/b.yaml"
    assert windows_file_path("  ", {}) is None


def _window(**override: str) -> str:
    fields = {"name": "n", "start": '"0 1 * * *"', "duration": "4h", "timezone": "UTC", "runbooks": "[decommission_brokers]"}
    fields.update(override)
    body = "\n".join(f"        {k}: {v}" for k, v in fields.items() if v is not None)
    return "clusters:\n  c1:\n    windows:\n      - " + body.lstrip() + "\n"


POLICY_OK = "    pre_approval:\n      runbooks: [x]\n      max_replicas_moved: 1\n      max_bytes_moved: 1GiB\n"

# (case, file text, line the error must name, words the message must contain)
MALFORMED = [
    ("empty file", "", 1, ["empty", "clusters"]),
    ("not yaml", "clusters:\n  c1: [unclosed\n", 3, ["not valid YAML"]),
    ("tab indentation", "clusters:\n\tc1: {}\n", 2, ["not valid YAML"]),
    ("top level is a list", "- clusters\n", 1, ["mapping"]),
    ("unknown top-level key", "clusters: {}\nwindow: 1\n", 2, ["unknown key 'window'", "clusters"]),
    ("no clusters key", "cluster:\n  c1: {}\n", 1, ["unknown key 'cluster'"]),
    ("clusters empty", "clusters: {}\n", 1, ["'clusters' is empty"]),
    ("bad connection id", "clusters:\n  'my cluster':\n    windows: []\n", 3, ["not an Airflow connection id"]),
    ("cluster without windows", "clusters:\n  c1:\n    pre_approval: {}\n", 3, ["lacks 'windows'"]),
    ("windows empty", "clusters:\n  c1:\n    windows: []\n", 3, ["non-empty list"]),
    ("windows is a mapping", "clusters:\n  c1:\n    windows:\n      name: n\n", 4, ["non-empty list"]),
    ("unknown cluster key", "clusters:\n  c1:\n    windws: []\n", 3, ["unknown key 'windws'", "windows"]),
    ("window lacks duration", _window(duration=None), 4, ["lacks 'duration'"]),
    ("unknown window key", _window(until="5h"), 9, ["unknown key 'until'"]),
    ("cron with 6 fields", _window(start='"0 0 1 * * *"'), 5, ["5-field cron", "'0 1 * * 2,4'"]),
    ("cron nonsense", _window(start='"at one"'), 5, ["5-field cron"]),
    ("cron hour 25", _window(start='"0 25 * * *"'), 5, ["5-field cron"]),
    ("duration without unit", _window(duration="4"), 6, ["not a duration", "4h"]),
    ("duration zero", _window(duration="0h"), 6, ["outside 1m..7d"]),
    ("duration eight days", _window(duration="8d"), 6, ["outside 1m..7d"]),
    ("duration negative", _window(duration="-1h"), 6, ["not a duration"]),
    ("unknown time zone", _window(timezone="Mars/Olympus"), 7, ["not an IANA zone", "Europe/Berlin"]),
    ("time zone abbreviation", _window(timezone="CEST"), 7, ["not an IANA zone"]),
    ("runbooks not a list", _window(runbooks="decommission_brokers"), 8, ["non-empty list"]),
    ("runbooks empty", _window(runbooks="[]"), 8, ["non-empty list"]),
    ("runbook id with space", _window(runbooks="['decommission brokers']"), 8, ["not a DAG id"]),
    ("window name list", _window(name="[a, b]"), 4, ["single value"]),
    ("duplicate window names",
     "clusters:\n  c1:\n    windows:\n" + _window().split("windows:\n")[1] + _window().split("windows:\n")[1],
     4, ["named 'n'", "own name"]),
    ("duplicate key", _window() + "  c1:\n    windows: []\n", 9, ["appears twice"]),
    ("policy lacks caps", _window() + "    pre_approval:\n      runbooks: [x]\n", 10, ["lacks", "max_bytes_moved"]),
    ("policy size unit", _window() + POLICY_OK.replace("1GiB", "1GB"), 12, ["not a size", "GiB"]),
    ("policy negative replicas", _window() + POLICY_OK.replace("moved: 1\n", "moved: -1\n"), 11,
     ["whole number"]),
    ("policy rehearsal yes", _window() + POLICY_OK + "      require_rehearsal: maybe\n", 13, ["true or false"]),
    ("policy unknown key", _window() + POLICY_OK + "      skip_guards: true\n", 13, ["unknown key 'skip_guards'"]),
    ("expiry without unit", _window() + "    approval_expires_after: 12\n", 9, ["not a duration", "45s"]),
    ("expiry too short", _window() + "    approval_expires_after: 5s\n", 9, ["outside 10s..7d"]),
    ("expiry a list", _window() + "    approval_expires_after: [1h]\n", 9, ["single value"]),
    ("approvers not a list", _window() + "    approvers: alice\n", 9, ["non-empty list of Airflow user names"]),
    ("approver with a space", _window() + "    approvers: ['al ice']\n", 9, ["not one of the Airflow user names"]),
]


@pytest.mark.parametrize("case,text,line,words", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_windows_file_is_refused_naming_the_line_and_the_fix(case, text, line, words):
    with pytest.raises(WindowsFileError) as info:
        parse_windows_text(text, "windows.yaml")
    message = str(info.value)
    assert message.startswith("windows.yaml"), message
    if line is not None:
        assert f"line {line}:" in message, message
    for w in words:
        assert w in message, message
    assert ";" in message, "every refusal says how to fix it: " + message


def test_the_table_has_at_least_twenty_cases():
    assert len(MALFORMED) >= 20


def test_an_unreadable_or_binary_file_is_refused(tmp_path):
    with pytest.raises(WindowsFileError, match="cannot read it.*KAFKA_RUNBOOKS_WINDOWS_FILE"):
        load_windows_file(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"clusters:\n  \xff\xfe: 1\n")
    with pytest.raises(WindowsFileError, match="not UTF-8"):
        load_windows_file(bad)
