"""One guide per runbook: a DAG's ``doc_md`` is its ``docs/runbooks/<dag_id>.md``, read at parse time.

The guide an SRE reads in the Airflow UI and the one in the repository are the same text, kept in
one place (the Markdown file); :func:`runbook_guide` reads it from the source tree, which is what
Airflow imports (as ``templates/``: docs/deployment.md).

Failure: a runbook without its guide raises :class:`FileNotFoundError` naming the file to write,
so the DAG shows an import error instead of an empty guide.
"""

from __future__ import annotations

from pathlib import Path

GUIDES = Path(__file__).resolve().parents[1] / "docs" / "runbooks"


def guide_path(dag_id: str) -> Path:
    """Where the guide of ``dag_id`` lives."""
    return GUIDES / f"{dag_id}.md"


def runbook_guide(dag_id: str) -> str:
    """The guide of ``dag_id`` (its ``doc_md``)."""
    path = guide_path(dag_id)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"runbook {dag_id!r} has no guide: write {path} (it is the DAG's doc_md)") from None
