"""The repository stands alone: every "§" reference names a section of docs/zookeeper.md, and no
tracked file points outside the checkout (its own absolute location, or a ``shared`` folder beside it).

Scans the files git tracks, so a reference added anywhere (code, tests, docs, bench, scripts,
templates) is checked; the recorded trajectories are data and are skipped.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "docs" / "zookeeper.md"
SECTION_REF = re.compile(r"§\s?(\d+(?:\.\d+)*)")
HEADING = re.compile(r"^#{2,4} (\d+(?:\.\d+)*)\.? ", re.MULTILINE)


def _tracked_text_files() -> dict[str, str]:
    names = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True,
                           timeout=60).stdout.decode().split("\0")
    out: dict[str, str] = {}
    for name in filter(None, names):
        path = REPO / name
        if name.startswith("tests/vectors/") or not path.is_file():
            continue
        try:
            out[name] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
    return out


def test_every_section_reference_resolves_to_a_heading_of_the_reference() -> None:
    sections = set(HEADING.findall(REFERENCE.read_text(encoding="utf-8")))
    assert {"0", "1.7", "2.7.3", "2.9", "8.6", "10"} <= sections
    unresolved = [f"{name}:{text.count(chr(10), 0, m.start()) + 1}: §{m.group(1)}"
                  for name, text in _tracked_text_files().items()
                  for m in SECTION_REF.finditer(text) if m.group(1) not in sections]
    assert not unresolved, "no such section in docs/zookeeper.md:\n" + "\n".join(unresolved)


def test_no_file_points_outside_the_checkout() -> None:
    beside = "shared"                       # the folder a development machine may keep beside the checkout
    outside = (str(REPO), str(REPO.parent / beside), f"../{beside}/", "kafka-zk-" + "contract")
    found = [f"{name}: {needle}" for name, text in _tracked_text_files().items()
             for needle in outside if needle in text and name != "tests/test_references.py"]
    assert not found, "files naming a place outside the repository:\n" + "\n".join(found)
