"""Running a director on a conversation by hand ("Run director…" on a thread page), ignoring filters.

A run is one (message, director) pair (unique in orchestration), so a manual run goes through the same
`create_runs` as routing and replay: a second click while the run is queued or running finds it and says
so. A run that has finished (completed, failed or skipped) is only started again when the user explicitly
asks for it ("Run again"): the same run goes back to the queue with one conditional UPDATE (two racing
clicks requeue it once), keeps its workspace and earlier transcripts, and gets a new director thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from django_q.tasks import async_task

from apps.accounts.models import Message, Thread
from apps.orchestration import actions as orchestration_actions
from apps.orchestration.models import Director, Run, RunStatus

MANUAL_TRIGGER = "manual"
ACTIVE = (RunStatus.QUEUED, RunStatus.RUNNING)
FINISHED = (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.SKIPPED)

Outcome = Literal["created", "already_active", "finished", "requeued"]


@dataclass(frozen=True, slots=True)
class ManualRunResult:
    outcome: Outcome
    run: Run


@dataclass(frozen=True, slots=True)
class DirectorChoice:
    director: Director
    run: Run | None  # this director's run on the target message, if any


# --- reads --------------------------------------------------------------------------------------------


def target_message(*, thread: Thread) -> Message | None:
    """The message a thread-level run works on: the newest one of the conversation."""
    return Message.objects.filter(thread=thread).order_by("-date", "-pk").first()


def directors_for_thread(*, user: Any, message: Message | None) -> list[DirectorChoice]:
    """Every director of the user (filters do not matter here), with its existing run on the message."""
    directors: QuerySet[Director] = Director.objects.filter(owner=user).select_related("api_config").order_by("name")
    runs: dict[int, Run] = {}
    if message is not None:
        runs = {run.director_id: run for run in Run.objects.filter(message=message, director__owner=user)}
    return [DirectorChoice(director=director, run=runs.get(director.pk)) for director in directors]


# --- writes -------------------------------------------------------------------------------------------


def run_director_on_message(*, message: Message, director: Director, run_again: bool = False) -> ManualRunResult:
    """Create (and enqueue on commit) the director's run on this message, or say why not.

    The caller has checked that both belong to the same user."""
    if director.owner_id != message.account.owner_id:
        raise PermissionError("the director and the message belong to different users")
    with transaction.atomic():
        existing = Run.objects.filter(message=message, director=director).first()
        if existing is None:
            created = orchestration_actions.create_runs(
                requests=[
                    orchestration_actions.RunRequest(
                        message_id=message.pk, director_id=director.pk, match={"manual": True}
                    )
                ],
                fetch_cycle_id=None,
                trigger=MANUAL_TRIGGER,
            )
            run = Run.objects.get(message=message, director=director)
            # A racing request (or the routing hook) may have created it first.
            return ManualRunResult("created" if run.pk in created else "already_active", run)
        if existing.status in ACTIVE:
            return ManualRunResult("already_active", existing)
        if not run_again:
            return ManualRunResult("finished", existing)
        requeued = Run.objects.filter(pk=existing.pk, status__in=FINISHED).update(
            status=RunStatus.QUEUED,
            status_reason="run again by hand",
            error="",
            trigger=MANUAL_TRIGGER,
            created_at=timezone.now(),
            started_at=None,
            finished_at=None,
        )
        existing.refresh_from_db()
        if not requeued:  # another click requeued it a moment ago
            return ManualRunResult("already_active", existing)
        run_id = existing.pk
        transaction.on_commit(
            lambda: async_task("apps.orchestration.tasks.run_director_task", run_id, task_name=f"run-{run_id}")
        )
        return ManualRunResult("requeued", existing)
