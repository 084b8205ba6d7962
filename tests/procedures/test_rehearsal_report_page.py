"""The rehearsal report opens as a page like the plan and final reports (issue 36: it opened as raw
Markdown, text/plain): the rehearse step writes ``rehearsal_report.html`` beside the Markdown (with the
outcome contract's ``markdown_page``) and links it; the reports app makes ``X.html`` of a report
written only as ``X.md``. The page carries no markup from the text (raw HTML off), so a topic or host
name can never inject any."""

from __future__ import annotations

from procedures.outcome.render import markdown_page


def test_a_markdown_report_becomes_a_page_with_its_tables_and_no_markup_from_the_text() -> None:
    text = ("# Rehearsal of plan `abc…` (decommission_brokers on zk)\n\n**rehearsed: 2 waves, 0 problems**\n\n"
            "| wave | partitions |\n| ---: | ---: |\n| 1 | 3 |\n\nNot copied: <script>alert(1)</script> topic.\n"
            "[report](javascript:alert(1))\n")
    page = markdown_page("Rehearsal — decommission_brokers manual__1", text)
    assert page.startswith("<!doctype html>") and "<title>Rehearsal — decommission_brokers manual__1</title>" in page
    assert "<h1>Rehearsal of plan <code>abc…</code> (decommission_brokers on zk)</h1>" in page
    assert "<strong>rehearsed: 2 waves, 0 problems</strong>" in page
    assert "<table>" in page and '<td style="text-align:right">3</td>' in page
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'href="javascript' not in page


def test_the_rehearse_step_links_the_page() -> None:
    from operators.rehearsal.step import REPORT_HTML, REPORT_NAME

    assert (REPORT_NAME, REPORT_HTML) == ("rehearsal_report.md", "rehearsal_report.html")
