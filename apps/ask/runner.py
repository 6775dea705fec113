"""Where a run executes. Under Daphne (ASGI) it is a task on the server's event loop that runs the
pipeline in a worker thread; its events go to the channel-layer group `ask.<run id>`, which the websocket
consumer of that run listens to. Without an event loop (WSGI, the test client, the CLI) it runs inline.

InMemoryChannelLayer queues belong to the server's loop, so events are sent from the worker thread with
async_to_sync, which hands the send back to that loop instead of creating a loop of its own.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import close_old_connections
from django.db.models import Q
from django.utils import timezone

from apps.ask.actions import execute_ask_run
from apps.ask.events import AskEvent, Emit, ask_group
from apps.ask.models import AskRun, RunStatus
from apps.ask.warmup import warm_up_in_background
from mailagent.liveness import holder_is_dead, process_identity

logger = logging.getLogger(__name__)

_tasks: set[asyncio.Task[Any]] = set()
_slots: dict[int, asyncio.Semaphore] = {}


def channel_emitter(run_id: object) -> Emit:
    layer = get_channel_layer()
    group = ask_group(run_id)

    def emit(event: AskEvent) -> None:
        if layer is not None:
            async_to_sync(layer.group_send)(group, {"type": "ask.event", "event": dict(event)})

    return emit


def _slot() -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    semaphore = _slots.get(id(loop))
    if semaphore is None:
        semaphore = asyncio.Semaphore(max(1, int(settings.ASK_MAX_CONCURRENT_RUNS)))
        _slots[id(loop)] = semaphore
    return semaphore


def _execute_in_thread(run_id: str) -> None:
    close_old_connections()
    try:
        execute_ask_run(run_id=run_id, emit=channel_emitter(run_id))
    finally:
        close_old_connections()


async def run_on_loop(run_id: str) -> None:
    async with _slot():
        try:
            await sync_to_async(_execute_in_thread, thread_sensitive=False)(run_id)
        except Exception:
            logger.exception("ask: run %s crashed", run_id)


async def launch(run_id: str) -> asyncio.Task[None]:
    """Start the run on the running loop and return at once."""
    task = asyncio.get_running_loop().create_task(run_on_loop(run_id))
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    return task


def start_ask_run(run_id: object, *, asgi: bool) -> None:
    """Called by views after the run row is committed."""
    AskRun.objects.filter(pk=str(run_id)).update(worker=process_identity())
    warm_up_in_background()  # for the next questions; this one builds what it needs itself
    if asgi:
        # A sync view under ASGI runs in a thread of the server; async_to_sync reaches the server's loop.
        async_to_sync(launch)(str(run_id))
    else:
        execute_ask_run(run_id=run_id, emit=channel_emitter(run_id))


# No Ask run takes this long (the pipeline's own budgets are seconds to a few minutes): past it, a run
# whose process cannot be checked (another machine) is called stalled.
STALLED_AFTER = dt.timedelta(minutes=15)
STALLED_ERROR = (
    "This run stopped because the server that ran it stopped or restarted before it finished. "
    "Nothing was changed; ask the question again."
)


def fail_stalled_runs(*, now: dt.datetime | None = None) -> int:
    """Runs execute in a web server process and die with it: mark those whose process is gone (at once)
    or that are older than STALLED_AFTER as failed with the reason, so none stays "running"."""
    at = now or timezone.now()
    unfinished = AskRun.objects.filter(status__in=[RunStatus.PENDING, RunStatus.RUNNING])
    dead = [pk for pk, worker in unfinished.exclude(worker="").values_list("pk", "worker") if holder_is_dead(worker)]
    too_old = Q(started_at__lt=at - STALLED_AFTER) | Q(started_at=None, created_at__lt=at - STALLED_AFTER)
    failed = unfinished.filter(Q(pk__in=dead) | too_old).update(
        status=RunStatus.ERROR, error=STALLED_ERROR, finished_at=at
    )
    if failed:
        logger.warning("ask: %d stalled runs marked failed", failed)
    return failed
