"""A Markdown report as an HTML page, like the plan and final reports (the rehearsal report, issue 36).

:func:`markdown_page` renders with markdown-it-py (CommonMark plus tables, the parser Airflow's own
dependencies bring) with raw HTML *off*: any ``<tag>`` in the text is shown as text, so a report
can never carry markup or a script; links keep only safe schemes (markdown-it's own check). The
page has the other reports' plain style and is served behind Airflow's login like them
(:mod:`operators.reports.app`, whose Content-Security-Policy forbids scripts anyway).

Failure: none of its own (any text renders).
"""

from __future__ import annotations

import html

from markdown_it import MarkdownIt

STYLE = ("body{font-family:sans-serif;max-width:960px;margin:2em auto}table{border-collapse:collapse}"
         "td,th{border:1px solid #ccc;padding:3px 8px}code{background:#f4f4f4}")


def markdown_page(title: str, text: str) -> str:
    """``text`` (Markdown) as a whole HTML page titled ``title``."""
    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(text)
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{STYLE}</style></head><body>\n{body}</body></html>\n")
