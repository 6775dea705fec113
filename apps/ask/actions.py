"""Ask's runs: creating and executing them (the pipeline's steps write what they find on the way: cached
attachment text in extraction.py, reviewable drafts in drafts.py, library decisions in file_actions.py), the
model choice, and the owner's click on a proposed mail change.

Ask never sends, archives, deletes, marks or creates rules: there is no code path for it here."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils import timezone

from apps.ask.events import AskEvent, Emit, discard, make_event
from apps.ask.llm import ask_llm_config
from apps.ask.models import AskConversation, AskRun, AskSettings, RunStatus
from apps.ask.pipeline import run_pipeline
from apps.ask.proposals import ProposalError, carry_out
from apps.ask.selectors import accounts_for_run, previous_turns
from apps.ask.steps import AskContext
from apps.llm.queue import OnWait, QueuePosition, waiting_as
from apps.llm.selectors import access_api_config

if TYPE_CHECKING:
    import datetime as dt

    from apps.accounts.models import Thread

logger = logging.getLogger(__name__)

MAX_QUESTION_CHARS = 2000


class AskInputError(ValueError):
    pass


class ConversationArchived(AskInputError):
    """A question added to an archived conversation."""


def create_ask_run(
    *,
    owner: Any,
    question: str,
    conversation: AskConversation | None = None,
    account_name: str = "",
    thread: Thread | None = None,
) -> AskRun:
    """A pending run in the given conversation (or a new one). The caller starts it (runner.py). With `thread`
    (the owner's: the caller checked access) only that thread's messages are evidence."""
    text = " ".join((question or "").split())
    if not text:
        raise AskInputError("Ask a question first.")
    if len(text) > MAX_QUESTION_CHARS:
        raise AskInputError(f"Questions are limited to {MAX_QUESTION_CHARS} characters.")
    if account_name and not accounts_for_run(owner=owner, account_name=account_name):
        raise AskInputError(f"No account named {account_name!r}")
    if conversation is not None and conversation.archived_at is not None:
        raise ConversationArchived("This conversation is archived: ask in a new conversation.")
    with transaction.atomic():
        if conversation is None:
            conversation = AskConversation.objects.create(owner=owner)
        return AskRun.objects.create(
            conversation=conversation, owner=owner, question=text, account_name=account_name, thread=thread
        )


def start_conversation(*, owner: Any) -> AskConversation:
    return AskConversation.objects.create(owner=owner)


def archive_conversation(*, conversation: AskConversation) -> AskConversation:
    """Keep the conversation readable but out of the Ask panel's list; nothing more can be asked in it."""
    if conversation.archived_at is None:
        conversation.archived_at = timezone.now()
        conversation.save(update_fields=["archived_at"])
    return conversation


def _claim(run_id: Any) -> bool:
    """pending → running, once: a second start of the same run does nothing."""
    return (
        AskRun.objects.filter(pk=run_id, status=RunStatus.PENDING).update(
            status=RunStatus.RUNNING, started_at=timezone.now()
        )
        == 1
    )


def _persisting(run_id: Any, emit: Emit) -> Emit:
    """Store the step list as it changes (so a late subscriber or a reload sees it), then pass it on."""
    steps: dict[str, dict[str, Any]] = {}

    def handle(event: AskEvent) -> None:
        if event["type"] in ("step_started", "step_completed"):
            entry = steps.setdefault(event["stepId"], {"stepId": event["stepId"], "label": event["label"]})
            entry.update(status=event["status"], detail=event["detail"])
            if event["type"] == "step_completed":
                entry["ms"] = int((event.get("payload") or {}).get("ms", 0))
            AskRun.objects.filter(pk=run_id).update(steps=list(steps.values()))
        try:
            emit(event)
        except Exception:  # progress is best effort; the stored run is the truth
            logger.warning("ask: could not emit %s for run %s", event["type"], run_id, exc_info=True)

    return handle


def _queue_reporter(run_id: Any, emit: Emit) -> OnWait:
    """The run's place in its model's line as "queue" events (apps/llm/queue.py reports each change)."""

    def report(position: QueuePosition | None) -> None:
        if position is None:
            emit(make_event(run_id, "queue", label="Generating", payload={"waiting": False}))
            return
        payload = {"waiting": True, "ahead": position.ahead, "generating": position.generating}
        emit(make_event(run_id, "queue", label="Waiting for the model", detail=position.text, payload=payload))

    return report


def execute_ask_run(*, run_id: Any, emit: Emit = discard, now: dt.datetime | None = None) -> AskRun | None:
    """Run the pipeline for a pending run and store the outcome; returns the run (None if it vanished)."""
    run = AskRun.objects.select_related("owner").filter(pk=run_id).first()
    if run is None or not _claim(run.pk):
        return run
    emit = _persisting(run.pk, emit)
    emit(make_event(run.pk, "started", label="Question received", detail=run.question[:200], status="running"))
    history, answers = previous_turns(run=run)
    context = AskContext(
        run_id=str(run.pk),
        owner=run.owner,
        question=run.question,
        accounts=accounts_for_run(owner=run.owner, account_name=run.account_name),
        now=now or timezone.now(),
        emit=emit,
        llm=ask_llm_config(run.owner),
        history=history,
        history_answers=answers,
        ask_run_id=run.pk,
        thread_id=run.thread_id,
    )
    try:
        with waiting_as(f"ask:{run.pk}", _queue_reporter(run.pk, emit)):
            outcome = run_pipeline(context)
    except Exception as exc:
        logger.exception("ask: run %s failed", run.pk)
        run.status = RunStatus.ERROR
        run.error = f"{type(exc).__name__}: {exc}"[:2000]
        run.finished_at = timezone.now()
        run.steps = AskRun.objects.filter(pk=run.pk).values_list("steps", flat=True).first() or []
        run.save(update_fields=["status", "error", "finished_at", "steps"])
        emit(make_event(run.pk, "error", label="The run failed", detail=run.error[:300], status="error"))
        return run
    run.status = RunStatus.DONE
    run.intent = outcome.intent
    run.answer = outcome.answer
    run.answer_mode = outcome.answer_mode
    run.plan = outcome.plan
    run.evidence = outcome.evidence
    run.scope = outcome.scope
    run.steps = outcome.steps
    run.timings = outcome.timings
    run.finished_at = timezone.now()
    run.save(
        update_fields=[
            "status",
            "intent",
            "answer",
            "answer_mode",
            "plan",
            "evidence",
            "scope",
            "steps",
            "timings",
            "finished_at",
        ]
    )
    emit(
        make_event(
            run.pk,
            "completed",
            label="Answered",
            detail=outcome.answer[:300],
            status="done",
            payload={
                "answerMode": outcome.answer_mode,
                "evidence": len(outcome.evidence),
                "ms": outcome.timings["total"],
            },
        )
    )
    return run


def choose_ask_model(*, owner: Any, api_config_id: int | None) -> AskSettings:
    """Ask answers with this ApiConfig of the owner's (None: the environment fallback or no model).
    Another user's config is a 404, like any object that is not yours."""
    api_config = access_api_config(user=owner, config_id=api_config_id) if api_config_id is not None else None
    chosen, _ = AskSettings.objects.update_or_create(
        owner=owner, defaults={"api_config": api_config, "updated_at": timezone.now()}
    )
    return chosen


def confirm_mail_proposal(
    *, run: AskRun, owner: Any, change: str, thread_ids: list[int], folders: dict[int, str] | None = None
) -> AskRun:
    """The owner's click on a run's proposed mail change (apps/ask/proposals.py): made through the mailbox's
    write-back, recorded on the run. Raises ProposalError when it cannot be made; the run row is locked so a
    double click makes the change once."""
    with transaction.atomic():
        locked = AskRun.objects.select_for_update().get(pk=run.pk, owner=owner)
        scope = dict(locked.scope or {})
        proposal = scope.get("proposal")
        if not proposal:
            raise ProposalError("This answer offers no change to make.")
        scope["proposal"] = carry_out(
            owner=owner, proposal=proposal, change=change, thread_ids=thread_ids, folders=folders
        )
        locked.scope = scope
        locked.save(update_fields=["scope"])
    return locked
