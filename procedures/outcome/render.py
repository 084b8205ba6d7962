"""Everything said about how a run ended, rendered from its :class:`~procedures.outcome.contract.Outcome` only.

* :func:`note` — the DAG-run note (outcome and cause, what was written, what next, what the run
  went through), at most 1000 characters (Airflow's limit);
* :func:`message` — the ``finished`` / ``failed`` notification's event, title and Markdown body
  (the channels add the plain-text and HTML forms and the report's link, once, by URL);
* :func:`report_md` / :func:`report_html` — the final report: the outcome's header, what the run
  went through, the links to the run's other reports, then the runbook's own sections;
* :func:`link_pages` — the pages the final-report task links to on its page (label → page).

Failure: none (text formatting); the HTML escapes everything the contract holds but
``details_html``, which the runbook renders itself with autoescape.
"""

from __future__ import annotations

from html import escape

from procedures.outcome.contract import Outcome

NOTE_LIMIT = 1000


def _lead(o: Outcome) -> str:
    return f"{o.headline}: {o.cause or o.summary or 'done'}"


def note(o: Outcome) -> str:
    """The DAG-run note."""
    lines = [_lead(o), f"written: {o.written_text}", f"next: {o.next_step}"]
    if o.cause and o.summary and o.kind not in ("rejected", "expired", "refused"):
        lines.append(o.summary)
    lines += list(o.history)
    text = "\n".join(lines)
    return text if len(text) <= NOTE_LIMIT else text[:NOTE_LIMIT - 1] + "…"


def _facts(o: Outcome, where: str = "") -> list[str]:
    """The outcome's facts, one line each (``where``: where the writes are listed)."""
    lines = [f"Written: {o.written_text}{where}", f"Next: {o.next_step}"]
    if o.summary:
        lines.append(o.summary)
    if o.failed_steps:
        lines.append(f"Failed step(s): {', '.join(o.failed_steps)}")
    return lines


def message(o: Outcome) -> dict[str, str]:
    """The notification: ``event`` (finished / failed), ``title`` and ``body`` (Markdown)."""
    body = [f"**{o.headline}**" + (f" — {o.cause}" if o.cause else ""), ""] + [f"- {line}" for line in _facts(o)]
    if o.history:
        body += ["", "What the run went through:", ""] + [f"- {line}" for line in o.history]
    title = f"{o.what}: {o.headline}" + ("" if o.ok else f" — {_short(o.cause)}")
    return {"event": "finished" if o.ok else "failed", "title": title, "body": "\n".join(body)}


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def link_pages(o: Outcome) -> dict[str, str]:
    """The run's pages the final report and the task page link to (label → page name)."""
    return dict(o.reports)


def report_md(o: Outcome) -> str:
    """The final report in Markdown."""
    lines = [f"# {o.what} — {o.headline}", ""]
    if o.cause:
        lines += [f"**{'Why' if not o.ok else 'Note'}:** {o.cause}", ""]
    lines += [f"- Run `{o.run_id}` of `{o.dag_id}`", f"- Outcome: {o.kind}"]
    lines += [f"- {line}" for line in _facts(o, " (every write in `audit.jsonl`)")]
    if o.history:
        lines += ["", "## What the run went through", ""] + [f"- {line}" for line in o.history]
    others = {k: v for k, v in link_pages(o).items() if v != "final_report.html"}
    if others:
        lines += ["", "## The run's other pages", ""] + [f"- [{k}]({v})" for k, v in others.items()]
    if o.details_md.strip():
        lines += ["", o.details_md.strip()]
    return "\n".join(lines) + "\n"


def markdown_html(text: str) -> str:
    """Markdown as HTML (tables; raw HTML in the text is escaped, never passed through)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table").render(text)


STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse}"
         "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}.bad{color:#b00}.ok{color:#070}")


def report_html(o: Outcome) -> str:
    """The final report in HTML."""
    cls = "ok" if o.ok else "bad"
    items = [f"Run <code>{escape(o.run_id)}</code> of <code>{escape(o.dag_id)}</code>", f"Outcome: {escape(o.kind)}"]
    items += [escape(line) for line in _facts(o, " (every write in audit.jsonl)")]
    parts = [f"<h1>{escape(o.what)} — <span class=\"{cls}\">{escape(o.headline)}</span></h1>"]
    if o.cause:
        parts.append(f"<p class=\"{cls}\"><strong>{'Why' if not o.ok else 'Note'}:</strong> {escape(o.cause)}</p>")
    parts.append("<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>")
    if o.history:
        parts.append("<h2>What the run went through</h2><ul>"
                     + "".join(f"<li>{escape(line)}</li>" for line in o.history) + "</ul>")
    others = {k: v for k, v in link_pages(o).items() if v != "final_report.html"}
    if others:
        parts.append("<h2>The run's other pages</h2><ul>"
                     + "".join(f"<li><a href=\"{escape(v)}\">{escape(k)}</a></li>" for k, v in others.items())
                     + "</ul>")
    parts.append(o.details_html or (markdown_html(o.details_md) if o.details_md.strip() else ""))
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{escape(o.what)} — "
            f"{escape(o.headline)}</title><style>{STYLE}</style></head><body>\n" + "\n".join(parts)
            + "\n</body></html>\n")


def markdown_page(title: str, text: str) -> str:
    """A Markdown document as a page of its own (the report pages' style)."""
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{escape(title)}</title>"
            f"<style>{STYLE}</style></head><body>\n{markdown_html(text)}</body></html>\n")
