"""``kafka-runbook plan``'s headline is true to the plan (issue 39): ``add-brokers`` with a drained,
registered broker (7, empty, not retiring-excluded here) printed "replica spread 45" — broker 7's
nothing against the others' — while the planner's own note said the spread over the brokers that
hold data was 0. The balance after is over the brokers holding data, and the headline names the
registered brokers left empty; the numbers agree with the note."""

from __future__ import annotations

import json
import os
import re

from cli.main import main
from tests.zk_helpers import create_topic_by_hand, register_brokers


def test_the_add_brokers_headline_counts_the_brokers_that_hold_data(zk, zk_connect, tmp_path, capsys) -> None:
    register_brokers(zk, {b: "abc"[b % 3] for b in range(1, 9)})           # 7 drained (empty), 8 new
    for t in range(2):
        create_topic_by_hand(zk, f"t{t}", {p: [1 + (p + t) % 6, 1 + (p + t + 1) % 6] for p in range(12)})
    out = str(tmp_path / "plan")
    assert main(["plan", "add-brokers", "--brokers", "8", "--zookeeper", zk_connect, "--engine", "driver",
                 "--ignore-retiring", "--out", out]) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    headline = next(line for line in printed.splitlines() if line.startswith("Balance after"))
    note = next(line for line in printed.splitlines() if "replica spread" in line and line.startswith("Note"))
    spread = int(re.search(r"replica spread (\d+) \(", headline).group(1))
    noted = int(re.search(r"replica spread \d+ → (\d+)", note).group(1))
    assert spread == noted <= 1, (headline, note)
    assert "registered but empty after the plan: 7" in headline
    summary = json.load(open(os.path.join(out, "summary.json")))
    assert summary["empty_after"] == [7] and summary["balance_after"]["replica_spread"] == noted
