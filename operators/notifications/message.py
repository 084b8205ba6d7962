"""What a runbook tells people: one :class:`Notification` per event, whatever the channel.

Events: ``approval_requested`` (plan summary, hash, link to the report), ``window_paused`` (the
run waits for the next maintenance window), ``stall`` (a wave stopped making progress, or is
blocked), ``failed`` (sent by the failing step as it fails, and again by the notify step),
``throttles_kept`` / ``throttles_removed`` (the teardown keeps the throttles on a wave still
copying, and later removes them), ``finished`` (outcome, summary, report path). Channels (e-mail, webhook) format
the same fields; nothing channel-specific lives here. :meth:`Notification.text` is the plain-text
form, :meth:`Notification.html` the HTML form (the body's Markdown rendered with markdown-it-py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from html import escape
from typing import Any

EVENTS = ("approval_requested", "window_paused", "stall", "failed", "throttles_kept", "throttles_removed",
          "finished")


@dataclass(frozen=True)
class Notification:
    """One message about one run."""

    event: str
    dag_id: str
    run_id: str
    title: str
    body: str
    link: str | None = None
    fields: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.event not in EVENTS:
            raise ValueError(f"unknown notification event {self.event!r}; use one of {', '.join(EVENTS)}")

    @property
    def subject(self) -> str:
        return f"[kafka-runbooks] {self.dag_id}: {self.title}"

    def text(self) -> str:
        """The plain-text form: title, body, the fields, the link."""
        lines = [self.title, "", self.body.rstrip()]
        if self.fields:
            lines += [""] + [f"{k}: {v}" for k, v in self.fields.items()]
        if self.link:
            lines += ["", f"open: {self.link} (Airflow login applies)"]
        lines += ["", f"run: {self.dag_id} / {self.run_id}"]
        return "\n".join(lines) + "\n"

    def html(self) -> str:
        """The HTML form: the title, the body's Markdown rendered (tables, links, emphasis), the
        fields as a table, the link; nothing the body says is passed through as raw HTML."""
        from markdown_it import MarkdownIt

        md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
        rows = "".join(f"<tr><th align=\"left\">{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in self.fields.items())
        parts = [f"<h2>{escape(self.title)}</h2>", md.render(self.body.rstrip())]
        if rows:
            parts.append(f'<table border="1" cellpadding="4" cellspacing="0">{rows}</table>')
        if self.link:
            name = "the live progress" if self.link.rstrip("/").endswith("/progress") else "the report"
            parts.append(f'<p><a href="{escape(self.link)}">Open {name}</a> (Airflow login applies)</p>')
        parts.append(f"<p style=\"color:#666\">run: {escape(self.dag_id)} / {escape(self.run_id)}</p>")
        return "<!doctype html><html><body>" + "\n".join(parts) + "</body></html>"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "subject": self.subject, "text": self.text()}
