"""/ws/ask/<run id>/: the live steps of one run. The socket joins only its run's group, so events of
another run can never reach it. By default it sends HTML fragments for the htmx ws extension (the same
partials the page renders, swapped by id); `?format=json` sends the typed events themselves.

On connect it first joins the group, then sends what already happened (the stored step list, or the
finished run), so a socket that connects late misses nothing; replaying a step only replaces its row."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.http import Http404
from django.template.loader import render_to_string

from apps.ask.events import EventType, ask_group, make_event
from apps.ask.models import AskRun, RunStatus
from apps.ask.steps import STEP_LABELS


def _load_run(user: Any, run_id: str) -> AskRun | None:
    from apps.ask.selectors import access_run

    try:
        return access_run(user=user, run_id=run_id)
    except Http404:
        return None


def _render_live_steps(run_id: str) -> str:
    """The rows of a run still in progress, as out-of-band swaps. Never the whole run item: a live item
    carries ws-connect, and swapping it in again would open another socket, whose snapshot would swap it
    again (the trial saw 55 sockets for one question)."""
    from apps.ask.presentation import step_rows

    run = AskRun.objects.get(pk=run_id)
    status = render_to_string("ask/partials/status.html", {"run_id": run_id, "status": run.status, "oob": True})
    return status + "".join(
        render_to_string("ask/partials/step.html", {"run_id": run_id, "step": step, "oob": True})
        for step in step_rows(run)
        if not step["hidden"]
    )


def _render_run(run_id: str) -> str:
    from apps.ask.presentation import run_context

    run = AskRun.objects.get(pk=run_id)
    return render_to_string("ask/partials/run.html", {"item": run_context(run), "oob": True})


class AskRunConsumer(AsyncJsonWebsocketConsumer):
    group_name: str = ""
    run_id: str = ""
    wants_json: bool = False
    closed: bool = False

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        self.run_id = str(self.scope["url_route"]["kwargs"]["run_id"])
        run = await database_sync_to_async(_load_run)(user, self.run_id)
        if run is None:
            await self.close(code=4404)
            return
        query = parse_qs((self.scope.get("query_string") or b"").decode("latin-1"))
        self.wants_json = (query.get("format") or [""])[0] == "json"
        self.group_name = ask_group(self.run_id)
        await self.channel_layer.group_add(self.group_name, self.channel_name)
        await self.accept()
        await self._send_snapshot()

    async def disconnect(self, code: int) -> None:
        if self.group_name:
            await self.channel_layer.group_discard(self.group_name, self.channel_name)

    async def _send_snapshot(self) -> None:
        run = await database_sync_to_async(AskRun.objects.get)(pk=self.run_id)
        if not self.wants_json:
            if run.is_finished:
                await self._send_final()
            else:
                await self.send(text_data=await database_sync_to_async(_render_live_steps)(self.run_id))
            return
        if run.status == RunStatus.DONE:
            await self.send_json(
                make_event(run.pk, "completed", label="Answered", detail=run.answer[:300], status="done")
            )
        elif run.status == RunStatus.ERROR:
            await self.send_json(
                make_event(run.pk, "error", label="The run failed", detail=run.error[:300], status="error")
            )
        else:
            for step in run.steps or []:
                kind: EventType = "step_completed" if step.get("status") in ("done", "error") else "step_started"
                await self.send_json(
                    make_event(
                        run.pk,
                        kind,
                        step_id=step.get("stepId", ""),
                        label=step.get("label", ""),
                        detail=step.get("detail", ""),
                        status=step.get("status", "running"),
                    )
                )

    async def _send_final(self) -> None:
        """The finished run item (without ws-connect), then the server closes the socket itself: nothing
        is sent on it afterwards, so no "send on a closed protocol" when the browser drops it."""
        if self.closed:
            return
        await self.send(text_data=await database_sync_to_async(_render_run)(self.run_id))
        self.closed = True
        if self.group_name:
            await self.channel_layer.group_discard(self.group_name, self.channel_name)
        await self.close()

    async def ask_event(self, message: dict[str, Any]) -> None:
        """Handler for `{"type": "ask.event", "event": {...}}` sent to the run's group."""
        event = message["event"]
        if self.closed:
            return
        if event.get("runId") != self.run_id:
            return  # never happens with per-run groups; cheap insurance against a misrouted send
        if self.wants_json:
            await self.send_json(event)
            return
        if event["type"] in ("completed", "error"):
            await self._send_final()
            return
        if event["type"] in ("step_started", "step_completed"):
            step = {
                "stepId": event["stepId"],
                "label": event.get("label") or STEP_LABELS.get(event["stepId"], event["stepId"]),
                "detail": event.get("detail", ""),
                "status": event.get("status", "running"),
                "ms": (event.get("payload") or {}).get("ms"),
                "hidden": False,
            }
            html = render_to_string("ask/partials/step.html", {"run_id": self.run_id, "step": step, "oob": True})
            await self.send(text_data=html)
            return
        queue = event.get("payload") if event["type"] == "queue" else None
        context = {"run_id": self.run_id, "status": "running", "oob": True}
        if queue and queue.get("waiting"):  # "waiting for the model: 2 ahead" until its turn comes
            context["queue"] = queue
        html = render_to_string("ask/partials/status.html", context)
        await self.send(text_data=html)
