"""The repository stands alone: every "§" reference names a section of docs/zookeeper.md, and no
tracked file points outside the checkout (its own absolute location, or a ``shared`` folder beside it).

Scans the files git tracks, so a reference added anywhere (code, tests, docs, bench, scripts,
templates) is checked; the recorded trajectories are data and are skipped.
"""

from __future__ import annotations

import functools
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


# -- paths, commands and modules a document names ------------------------------------------------------

#: a Markdown code span or a link's target
_SPAN = re.compile(r"`([^`\n]+)`|\]\(([^)\s]+)\)")
#: the file endings a bare name must have to be read as a file (``placement.py``, ``BENCHMARKS.md``)
_FILE_END = re.compile(r"\.(py|md|sh|toml|cfg|ya?ml|json|j2|txt)$")
#: a placeholder in a path (``dags/<dag_id>.py``): any name matches it
_PLACEHOLDER = re.compile(r"<[^>]+>")


@functools.cache
def _tracked_names() -> tuple[str, ...]:
    return tuple(_tracked_text_files())


def _top_level_names() -> set[str]:
    return {name.split("/")[0] for name in _tracked_names()} | {".venv"}


def _resolves(word: str, base: Path, tracked: set[str]) -> bool:
    """Whether ``word`` (a path relative to ``base``, maybe with ``<placeholders>``) names a file or folder."""
    pattern = _PLACEHOLDER.sub("*", word.split("#")[0].rstrip("/"))
    if "*" in pattern:
        return any(base.glob(pattern))
    return (base / pattern).exists()


def _module_resolves(dotted: str) -> bool:
    path = REPO / dotted.replace(".", "/")
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file() or dotted in ("pytest",)


def _names_in_module(word: str) -> bool:
    """``folder/module.name``: a module of the checkout that defines ``name``."""
    module, _, name = word.rpartition(".")
    path = REPO / f"{module}.py"
    return bool(module) and path.is_file() and re.search(
        rf"^\s*(async\s+)?(def|class) {re.escape(name)}\b|^{re.escape(name)}\b", path.read_text(encoding="utf-8"),
        re.MULTILINE) is not None


def unresolved_references(text: str, base: Path = REPO, bare_names: bool = True) -> list[str]:
    """Every path, ``bash scripts/…`` command, ``-m`` module and ``file::test`` id that ``text`` names in
    its code spans and links and that does not exist in the checkout (paths relative to ``base``, the
    document's folder; top-level names also from the checkout's root; ``folder/module.name`` a name the
    module defines). URLs, anchors and words that are no path (a flag, a name of code) are not checked;
    a ``<placeholder>`` matches any name. ``bare_names``: a bare file name (``validate.py``) must be
    some tracked file's name (off for texts that name the files a run writes)."""
    tops = _top_level_names()
    basenames = {name.rsplit("/", 1)[-1] for name in _tracked_names()}
    missing: list[str] = []
    for span, link in _SPAN.findall(text):
        if link:
            if not link.startswith(("http://", "https://", "mailto:", "#")) and not _resolves(link, base, tops):
                missing.append(link)
            continue
        words = span.split()
        for i, word in enumerate(words):
            word = word.strip(",;:()'\"")
            if i > 0 and words[i - 1] == "-m":
                if not _module_resolves(word):
                    missing.append(f"-m {word}")
                continue
            if "::" in word:
                file, _, name = word.partition("::")
                if not (REPO / file).is_file() or not re.search(
                        rf"^\s*(async\s+)?def {re.escape(name.split('[')[0])}\b", (REPO / file).read_text(encoding="utf-8"),
                        re.MULTILINE):
                    missing.append(word)
                continue
            if word.startswith(("http://", "https://", "-", "$", "/")) or "=" in word:
                continue
            if "/" in word:
                if word.split("/")[0] in tops or (bare_names and _FILE_END.search(word)):
                    if not (_resolves(word, REPO, tops) or _resolves(word, base, tops) or _names_in_module(word)):
                        missing.append(word)
            elif bare_names and _FILE_END.search(word) and not _PLACEHOLDER.search(word) and word not in basenames:
                missing.append(word)
    return missing


def test_the_checker_finds_what_is_missing_and_passes_what_exists(tmp_path: Path) -> None:
    text = ("`bash scripts/test` `bash scripts/nope` `tests/test_layers.py::test_modules_are_loaded_by_name_only_where_listed` "
            "`tests/test_layers.py::no_such_test` `python -m cli.main` `python -m cli.nope` `dags/<dag_id>.py` "
            "`dags/<x>.nope` [guide](docs/runbooks/rolling_restart.md#a) [x](docs/none.md) `validate.py` `gone.py` "
            "`--shape 20k` `KR_TEST_WORKERS=2` `https://example.org/a/b`")
    assert unresolved_references(text) == ["scripts/nope", "tests/test_layers.py::no_such_test", "-m cli.nope",
                                           "dags/<x>.nope", "docs/none.md", "gone.py"]


def test_every_path_readme_and_the_docs_name_exists() -> None:
    """README.md and docs/: every path under one of the checkout's folders, every ``-m`` module and every
    ``file::test`` id (bare file names there are mostly the files a run writes, so they are not checked)."""
    docs = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    missing = [f"{doc.relative_to(REPO)}: {word}" for doc in docs
               for word in unresolved_references(doc.read_text(encoding="utf-8"), doc.parent, bare_names=False)]
    assert not missing, "no such file, module or test:\n" + "\n".join(missing)
