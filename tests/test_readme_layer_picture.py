"""README's layer picture says what tests/test_layers.py enforces: every folder of the product that
exists is drawn, a folder drawn below another may not import it, and folders drawn side by side
(one line, ``a/ · b/``) may not import each other (by :data:`tests.test_layers.FORBIDDEN`; a folder
without a row there, ``cli/``, ``dags/``, ``replica_verify/``, is only required to be drawn)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_layers import FORBIDDEN, PRODUCT

REPO = Path(__file__).resolve().parents[1]
FOLDER = re.compile(r"\b([a-z_]+)/")


def picture() -> list[list[str]]:
    """The floors of README's layer picture, top first: the folders each line of the block starts with."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    layout = readme[readme.index("## Layout"):readme.index("\n## ", readme.index("## Layout") + 1)]
    block = layout.split("```")[-2]
    floors = []
    for line in block.splitlines():
        if line and not line.startswith(" "):
            head = re.split(r"\s{2,}", line)[0]
            floors.append(FOLDER.findall(head))
    return floors


def test_every_product_folder_is_drawn() -> None:
    drawn = {folder for floor in picture() for folder in floor}
    assert {f for f in PRODUCT if (REPO / f).is_dir()} <= drawn, drawn


def test_no_folder_may_import_one_drawn_above_or_beside_it() -> None:
    floors = picture()
    wrong = []
    for i, floor in enumerate(floors):
        above = {f for upper in floors[:i] for f in upper}
        for folder in floor:
            may_not = FORBIDDEN.get(folder)
            if may_not is None:
                continue
            wrong += [f"{folder}/ is drawn under {other}/ but may import it" for other in sorted(above - may_not)]
            wrong += [f"{folder}/ is drawn beside {other}/ but may import it"
                      for other in floor if other != folder and other not in may_not]
    assert not wrong, wrong
