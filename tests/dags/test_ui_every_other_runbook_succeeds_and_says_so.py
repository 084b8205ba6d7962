"""The six runbooks that move no data (batches, the roll, topic changes, stuck reassignments, health),
run to success on the emulator and read back in Chromium (issue 36): the second half of
test_ui_every_runbook_succeeds_and_says_so (its docstring says what is walked), on an Airflow of its
own serving all 13 DAGs, so two workers run the halves side by side. Screenshots:
test-artifacts/walk-ok2-*.png.
"""

from __future__ import annotations

import pytest

from tests.dags.test_ui_every_runbook_succeeds_and_says_so import DAG_IDS, MOVING, walk_to_success

pytestmark = [pytest.mark.airflow, pytest.mark.real_airflow, pytest.mark.timeout(1500, method="thread")]

OTHERS = tuple(d for d in DAG_IDS if d not in MOVING)


def test_every_other_runbook_succeeds_and_the_person_sees_it_on_the_note_the_mail_and_one_click_reports(
        zk_server, tmp_path) -> None:
    assert len(OTHERS) == 6 and len(MOVING) == 7
    walk = walk_to_success(zk_server, tmp_path, OTHERS, "walk-ok2")
    timings = {k: round(v) for k, v in walk.timings.items()}
    print("timings (s):", timings)
    assert not walk.found, (f"{len(walk.found)} thing(s) a person would see wrong:\n" + "\n".join(walk.found)
                            + f"\ntimings (s): {timings}")
