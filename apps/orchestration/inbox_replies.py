"""Decisions back into the run: the user's Inbox reply (an option or free text) is appended to the director's
transcript as a user message and the run continues in a new django-q job, where the director may push again.

workspaces announces replies (apps/workspaces/hooks.py) and this module subscribes in the AppConfig, so
workspaces never imports orchestration. The entry's `reply_delivered_at` is the outbox flag: set in the same
transaction that stores the transcript, so a reply is taken exactly once; a run still busy when the reply
arrives is tried again a little later (bounded), and `deliver_pending_replies` picks up anything left.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.db import transaction
from django.utils import timezone
from django_q.models import Schedule
from django_q.tasks import async_task, schedule

from apps.llm import LLMError, run_tool_loop
from apps.llm.configs import llm_config
from apps.llm.queue import waiting_as
from apps.orchestration.engine import RunEngine, stop_reason
from apps.orchestration.models import Conversation, Phase, Run, RunStatus, ThreadKind, ThreadStatus
from apps.orchestration.tools.context import Actor
from apps.workspaces.hooks import InboxReply
from apps.workspaces.models import InboxEntry

logger = logging.getLogger(__name__)

RETRY_SECONDS = 15
MAX_ATTEMPTS = 40  # ten minutes of a run still working on something else
RESUMABLE = (RunStatus.COMPLETED, RunStatus.FAILED)
CONTINUE_TASK = "apps.orchestration.inbox_replies.continue_run_task"


def enqueue_reply(reply: InboxReply) -> None:
    """The hooks listener (called on commit of the reply)."""
    if reply.run_id is not None:
        async_task(
            "apps.orchestration.inbox_replies.continue_run_task",
            reply.entry_id,
            1,
            task_name=f"inbox-reply-{reply.entry_id}-1",
        )


def continue_run_task(entry_id: str, attempt: int = 1) -> str:
    entry = InboxEntry.objects.filter(pk=entry_id).first()
    if entry is None or entry.run_id is None or entry.reply_delivered_at is not None:
        return "nothing to deliver"
    run = continue_run_with_reply(entry=entry)
    if run is not None:
        return run.status
    if attempt >= MAX_ATTEMPTS:
        logger.warning("inbox reply %s: run %s stayed busy; left for deliver_pending_replies", entry_id, entry.run_id)
        return "run busy; left pending"
    schedule(
        CONTINUE_TASK,
        entry_id,
        attempt + 1,
        name=f"inbox-reply-{entry_id}-{attempt + 1}",
        schedule_type=Schedule.ONCE,
        next_run=timezone.now() + dt.timedelta(seconds=RETRY_SECONDS),
    )
    return "run busy; retrying"


def continue_run_with_reply(*, entry: InboxEntry) -> Run | None:
    """Resume the entry's run with its reply, if the run is finished (else None: try later)."""
    if entry.run_id is None:
        return None
    taken = Run.objects.filter(pk=entry.run_id, status__in=RESUMABLE).update(
        status=RunStatus.RUNNING, started_at=timezone.now(), finished_at=None
    )
    if not taken:
        return None
    run = Run.objects.select_related("director", "message").get(pk=entry.run_id)
    try:
        with waiting_as(run.queue_requester):
            return ResumedRun(run).resume(entry)
    except Exception as exc:  # never leave the run "running"
        logger.exception("resuming run %s with inbox reply %s crashed", run.pk, entry.pk)
        run.status, run.error, run.finished_at = RunStatus.FAILED, f"{type(exc).__name__}: {exc}"[:4000], timezone.now()
        run.save(update_fields=["status", "error", "finished_at"])
        return run


def deliver_pending_replies() -> int:
    """Replies to runs that were not taken yet (a lost job, a run busy for too long): enqueue them again.
    Only replies older than the retry window, so the sweep does not race a retry still scheduled."""
    cutoff = timezone.now() - dt.timedelta(seconds=RETRY_SECONDS * MAX_ATTEMPTS + 300)
    pending = list(
        InboxEntry.objects.filter(
            replied_at__lt=cutoff, reply_delivered_at__isnull=True, run_id__isnull=False
        ).values_list("pk", flat=True)
    )
    for entry_id in pending:
        async_task(
            "apps.orchestration.inbox_replies.continue_run_task",
            str(entry_id),
            1,
            task_name=f"inbox-reply-{entry_id}-sweep",
        )
    return len(pending)


def reply_message(entry: InboxEntry) -> str:
    if entry.ask:
        return (
            f"The user answered your Inbox question “{entry.ask.get('question', '')}”:\n\n{entry.reply}\n\n"
            "Continue the work with this answer."
        )
    return f"The user replied to your Inbox entry:\n\n{entry.reply}\n\nContinue the work with this reply."


class ResumedRun(RunEngine):
    def resume(self, entry: InboxEntry) -> Run:
        director = self.director
        if director.api_config is None:
            return self._finish(RunStatus.SKIPPED, reason="Director has no API config: the reply was not processed")
        thread = (
            Conversation.objects.filter(run=self.run, kind=ThreadKind.DIRECTOR).order_by("-created_at", "-pk").first()
        )
        if thread is None:
            return self._finish(RunStatus.FAILED, error="the run has no director transcript to continue")
        if reason := thread.undecryptable_reason():
            return self._finish(RunStatus.FAILED, error=f"cannot continue the run: {reason}")
        self.ctx.director_thread = thread
        messages = list(thread.messages or [])
        messages.append({"role": "user", "content": reply_message(entry)})
        with transaction.atomic():
            # Two jobs for one reply (a retry and a sweep) may both get here: only one appends it.
            undelivered = InboxEntry.objects.select_for_update().filter(pk=entry.pk, reply_delivered_at__isnull=True)
            if not list(undelivered.values_list("pk", flat=True)):
                return self._finish(RunStatus.COMPLETED, reason="")
            thread.status, thread.finalized, thread.ended_at = ThreadStatus.ONGOING, False, None
            thread.save(update_fields=["status", "finalized", "ended_at"])
            self._persist_turn(thread, messages)
            InboxEntry.objects.filter(pk=entry.pk).update(reply_delivered_at=timezone.now())
        self.log(Phase.DIRECTOR, detail={"action": "inbox_reply", "entryId": str(entry.pk), "reply": entry.reply})
        actor = Actor(kind="director", thread=thread)
        try:
            outcome = run_tool_loop(
                llm_config(director.api_config),
                messages,
                self.director_tools(actor),
                step_limit=director.step_limit,
                events=self.provider_events(thread),
                on_assistant=self._on_assistant(thread, messages),
                on_tool=self._tool_logger(thread, messages, None),
                on_step=lambda: self._persist_turn(thread, messages),
                finish=True,
            )
        except LLMError as exc:
            self._close_thread(thread, ThreadStatus.FAILED)
            self._close_agent_sessions(ThreadStatus.FAILED)
            self.log(Phase.DIRECTOR, detail={"action": "director_failed", "category": exc.category}, error=str(exc))
            return self._finish(RunStatus.FAILED, error=f"model call failed ({exc.category}): {exc}")
        thread.finalized = True
        self._close_thread(thread, ThreadStatus.COMPLETED)
        self._close_agent_sessions(ThreadStatus.COMPLETED)
        reason = stop_reason(outcome.reason, director.step_limit)
        self.log(
            Phase.RESULT,
            detail={"action": "director_complete", "steps": outcome.steps, "stop": outcome.reason, "after": "reply"},
            result={"final": outcome.final},
        )
        return self._finish(RunStatus.COMPLETED, reason=reason)


def deliver_pending_replies_task() -> str:
    return f"{deliver_pending_replies()} pending replies enqueued"
