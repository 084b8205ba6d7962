"""TopicsDeletedSensor: a step that waits, deferred, until topics are deleted (docs/zookeeper.md §2.9).

``execute()`` checks in the task first (up to ``inline_wait_s``: topics already deleted, as after
``delete_batches``, never defer; :mod:`operators.deferral` says why), then defers to
:class:`operators.triggers.deletion.TopicsDeletedTrigger` with an absolute deadline;
``execute_complete`` maps the event: ``done`` returns the deleted topics,
``not_deleted``/``timeout`` raise :class:`operators.batches.deletion.TopicsNotDeleted` ("marked for
deletion but not deleted: the brokers probably run with delete.topic.enable=false"),
``error`` raises :class:`kafka_zk.errors.KafkaZkError`. The delete_topics runbook uses it as its
final ``verify_deleted`` check over every selected topic (``topics`` may be an XCom list).

An empty topic list (a dry run marked nothing) succeeds at once without waiting.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any, Sequence

from airflow.sdk import BaseOperator

from kafka_zk.admin.deletion import deletion_status
from kafka_zk.errors import KafkaZkError
from operators.deferral import INLINE_WAIT_S, MIN_DEFER_S, not_before
from procedures.inline_wait import wait_inline
from operators.batches.deletion import NOT_DELETED_HINT, TopicsNotDeleted
from operators.hooks.zookeeper import ZooKeeperHook
from operators.triggers.deletion import TopicsDeletedTrigger


class TopicsDeletedSensor(BaseOperator):
    """Wait until every topic of ``topics`` is gone from ``/brokers/topics``, ``/config/topics`` and the markers."""

    template_fields: Sequence[str] = ("zk_conn_id", "topics", "timeout_s", "poll_interval_s")
    ui_color = "#d9ead3"

    def __init__(self, *, zk_conn_id: str, topics: Any, timeout_s: Any = 600, poll_interval_s: Any = 1.0,
                 inline_wait_s: float = INLINE_WAIT_S, min_defer_s: float = MIN_DEFER_S, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.zk_conn_id = zk_conn_id
        self.topics = topics
        self.timeout_s = timeout_s
        self.poll_interval_s = poll_interval_s
        self.inline_wait_s = inline_wait_s
        self.min_defer_s = min_defer_s

    def execute(self, context: Any) -> list[str] | None:
        topics = [str(t) for t in (self.topics or [])]
        if not topics:
            self.log.info("no topics to wait for (nothing was marked for deletion)")
            return None
        deadline = time.time() + float(self.timeout_s)
        with ZooKeeperHook(self.zk_conn_id) as hook:
            client = hook.get_conn()
            if wait_inline(lambda: "done" if all(s.state == "deleted" for s in deletion_status(client, topics).values())
                           else "waiting", self.inline_wait_s, float(self.poll_interval_s), deadline):
                self.log.info("all %d topic(s) are deleted", len(topics))
                return topics
        self.defer(trigger=TopicsDeletedTrigger(self.zk_conn_id, topics, deadline, float(self.poll_interval_s),
                                                not_before=not_before(self.min_defer_s)),
                   method_name="execute_complete", timeout=timedelta(seconds=float(self.timeout_s) + 60))

    def execute_complete(self, context: Any, event: dict[str, Any]) -> list[str]:
        status = event.get("status")
        if status == "done":
            return list(event.get("deleted", []))
        if status == "error":
            raise KafkaZkError(str(event.get("message")))
        stuck = sorted(set(event.get("pending", [])) | set(event.get("not_deleted", [])))
        raise TopicsNotDeleted(f"topic(s) {', '.join(stuck)} {NOT_DELETED_HINT} ({event.get('message')})")
