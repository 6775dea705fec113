"""Typed notification events: a run completed or failed, or an agent pushed an entry to the Inbox.

They are announced from database writes that every code path makes (a run's final `save(update_fields=[...,
"finished_at"])`, an InboxEntry insert), so orchestration and workspaces need no knowledge of this app. On
commit the event goes through the channel layer to the owner's group ``user.<id>`` (NotificationsConsumer at
/ws/notifications/). InMemoryChannelLayer does not cross processes, so the browser also polls
`selectors.events_since`, which rebuilds the same events from database state.
"""

from __future__ import annotations

import logging
from typing import Any, Literal, TypedDict

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.db import transaction
from django.db.models.signals import post_save
from django.urls import reverse

from mailagent.consumers import user_group

logger = logging.getLogger(__name__)

ResultEventKind = Literal["run_completed", "run_failed", "inbox_pushed"]
NOTIFIED_RUN_STATUSES = {"completed": "run_completed", "failed": "run_failed"}


class ResultEvent(TypedDict):
    type: ResultEventKind
    id: str  # stable per occurrence ("run:12:completed:<finished ms>"): browsers de-duplicate by it
    title: str
    body: str
    node: str  # the Results tree node to focus ("run-12")
    url: str
    run_id: int | None
    message_id: int | None
    at: str


def _ms(value: Any) -> int:
    return int(value.timestamp() * 1000)


def run_event(
    *, run_id: int, status: str, message_id: int, subject: str, director: str, finished_at: Any
) -> ResultEvent:
    kind: ResultEventKind = "run_completed" if status == "completed" else "run_failed"
    subject = subject.strip() or "(no subject)"
    title = f"Processing {'complete' if kind == 'run_completed' else 'failed'}: {subject} — {director}"
    node = f"run-{run_id}"
    return {
        "type": kind,
        "id": f"run:{run_id}:{status}:{_ms(finished_at)}",
        "title": title[:300],
        "body": "Open the results." if kind == "run_completed" else "The run failed; open it to see why.",
        "node": node,
        "url": f"{reverse('results:page')}?node={node}",
        "run_id": run_id,
        "message_id": message_id,
        "at": finished_at.isoformat(),
    }


def inbox_event(*, entry_id: str, label: str, comments: str, run_id: int | None, created: Any) -> ResultEvent:
    node = f"run-{run_id}" if run_id is not None else ""
    url = f"{reverse('results:page')}?node={node}" if node else reverse("inbox:inbox")
    return {
        "type": "inbox_pushed",
        "id": f"inbox:{entry_id}",
        "title": f"New in your Inbox: {label}"[:300],
        "body": " ".join(comments.split())[:200],
        "node": node,
        "url": url,
        "run_id": run_id,
        "message_id": None,
        "at": created.isoformat(),
    }


def send_event(owner_id: int, event: ResultEvent) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    if isinstance(layer, InMemoryChannelLayer) and not layer.groups.get(user_group(owner_id)):
        # The in-memory layer reaches only this process's sockets and none is open for this user here (a
        # worker process has none): nothing to deliver; the browser's poll finds the event in the database.
        return
    try:
        async_to_sync(layer.group_send)(user_group(owner_id), {"type": "notify", "event": dict(event)})
    except Exception:  # best effort: the database is the truth and browsers poll it
        logger.warning("could not push %s to user %s", event["type"], owner_id, exc_info=True)


def _run_saved(sender: Any, instance: Any, created: bool, update_fields: Any = None, **kwargs: Any) -> None:
    if created or not update_fields or "finished_at" not in update_fields:
        return
    if instance.status not in NOTIFIED_RUN_STATUSES or instance.finished_at is None:
        return
    run_id, status, finished_at = instance.pk, instance.status, instance.finished_at
    # The engine loaded the run with its director and message: no query for what the event names.
    model = type(instance)
    known = (
        (instance.director.owner_id, instance.director.name, instance.message_id, instance.message.subject)
        if model.director.is_cached(instance) and model.message.is_cached(instance)
        else None
    )

    def announce() -> None:
        from apps.orchestration.models import Run

        row = known or (
            Run.objects.filter(pk=run_id)
            .values_list("director__owner_id", "director__name", "message_id", "message__subject")
            .first()
        )
        if row is None:
            return
        owner_id, director, message_id, subject = row
        send_event(
            owner_id,
            run_event(
                run_id=run_id,
                status=status,
                message_id=message_id,
                subject=subject or "",
                director=director,
                finished_at=finished_at,
            ),
        )

    transaction.on_commit(announce)


def _entry_saved(sender: Any, instance: Any, created: bool, **kwargs: Any) -> None:
    if not created:
        return
    event = inbox_event(
        entry_id=str(instance.pk),
        label=instance.workspace_label,
        comments=instance.comments,
        run_id=instance.run_id,
        created=instance.created,
    )
    owner_id = instance.owner_id
    transaction.on_commit(lambda: send_event(owner_id, event))


def connect_signals() -> None:
    from apps.orchestration.models import Run
    from apps.workspaces.models import InboxEntry

    post_save.connect(_run_saved, sender=Run, dispatch_uid="results.run_finished")
    post_save.connect(_entry_saved, sender=InboxEntry, dispatch_uid="results.inbox_pushed")
