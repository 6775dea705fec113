"""Reads for Ask: permission-checked runs and conversations, the earlier turns a follow-up plans with,
and the JSON shape of a run shared by the API and `manage.py ask --json`."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from django.db.models import Count, Max, Q, QuerySet
from django.db.models.functions import Coalesce
from django.http import Http404

from apps.accounts.models import MailAccount
from apps.ask.models import AskConversation, AskRun, Draft, Intent, RunStatus
from apps.ask.planner import PreviousTurn
from apps.llm.models import ApiConfig
from apps.llm.selectors import api_configs_for_user

HISTORY_TURNS = 3


def _uuid(value: object) -> uuid.UUID:
    try:
        return uuid.UUID(str(value))
    except (TypeError, ValueError):
        raise Http404("No such run") from None


def access_run(*, user: Any, run_id: object) -> AskRun:
    run = AskRun.objects.select_related("thread").filter(pk=_uuid(run_id), owner=user).first()
    if run is None:
        raise Http404("No such run")
    return run


def access_conversation(*, user: Any, conversation_id: object) -> AskConversation:
    conversation = AskConversation.objects.filter(pk=_uuid(conversation_id), owner=user).first()
    if conversation is None:
        raise Http404("No such conversation")
    return conversation


def latest_conversation(*, user: Any) -> AskConversation | None:
    return AskConversation.objects.filter(owner=user, archived_at=None).order_by("-created_at").first()


def conversation_runs(*, conversation: AskConversation) -> QuerySet[AskRun]:
    return AskRun.objects.filter(conversation=conversation).select_related("thread").order_by("created_at", "pk")


def recent_conversations(*, user: Any, limit: int = 10) -> list[AskConversation]:
    return list(
        AskConversation.objects.filter(owner=user, archived_at=None)
        .prefetch_related("runs")
        .order_by("-created_at")[:limit]
    )


def accounts_for_run(*, owner: Any, account_name: str = "") -> list[MailAccount]:
    accounts = MailAccount.objects.filter(owner=owner).defer("credentials", "last_sync_summary")
    if account_name:
        accounts = accounts.filter(name=account_name)
    return list(accounts.order_by("name"))


def previous_turns(*, run: AskRun) -> tuple[list[PreviousTurn], list[tuple[str, str]]]:
    """The conversation's earlier answered questions, oldest first: plans for the planner, question and
    answer pairs for the language model."""
    earlier = list(
        AskRun.objects.filter(
            conversation_id=run.conversation_id,
            created_at__lte=run.created_at,
            status=RunStatus.DONE,
            intent=Intent.QUESTION,
        )
        .exclude(pk=run.pk)
        .order_by("-created_at")[:HISTORY_TURNS]
    )
    earlier.reverse()
    turns: list[PreviousTurn] = []
    answers: list[tuple[str, str]] = []
    for item in earlier:
        top_date = None
        rows = [row for row in item.evidence or [] if not row.get("related")]
        if rows and rows[0].get("date"):
            top_date = dt.datetime.fromisoformat(rows[0]["date"])
        turns.append(
            PreviousTurn(
                question=item.question,
                plan=dict(item.plan or {}),
                top_evidence_date=top_date,
                answer=item.answer,
                at=item.finished_at or item.created_at,
            )
        )
        answers.append((item.question, item.answer))
    return turns, answers


def drafts_for_run(*, run: AskRun) -> list[Draft]:
    return list(Draft.objects.filter(ask_run=run).order_by("pk"))


def public_evidence(row: dict[str, Any]) -> dict[str, Any]:
    item: dict[str, Any] = {
        "message_id": row.get("message_id", ""),
        "sources": row.get("sources", []),
        "score": row.get("score", 0.0),
        "snippet": row.get("snippet", ""),
        "subject": row.get("subject", ""),
        "from": row.get("sender", ""),
        "date": row.get("date"),
        "matched_fields": row.get("matched_fields", []),
        "related": bool(row.get("related")),
    }
    if row.get("attachment"):
        item["attachment"] = row["attachment"]["filename"]
    return item


def run_json(run: AskRun) -> dict[str, Any]:
    """The shape of `GET /api/ask/<runId>` and `manage.py ask --json`."""
    return {
        "runId": str(run.pk),
        "conversationId": str(run.conversation_id),
        "question": run.question,
        "status": run.status,
        "intent": run.intent,
        "answer": run.answer,
        "answerMode": run.answer_mode,
        "evidence": [public_evidence(row) for row in run.evidence or []],
        "scope": run.scope or {},
        "timings": run.timings or {},
        "steps": run.steps or [],
        "error": run.error,
        "createdAt": run.created_at.isoformat(),
        "finishedAt": run.finished_at.isoformat() if run.finished_at else None,
    }


def find_api_config(*, owner: Any, config_id: int) -> ApiConfig | None:
    """One of the owner's models (Settings → Models), or None for another user's or a deleted one."""
    return ApiConfig.objects.filter(owner=owner, pk=config_id).first()


def api_configs(*, owner: Any) -> QuerySet[ApiConfig]:
    """The owner's models (Settings → Models), for the Ask settings choice."""
    return api_configs_for_user(user=owner).only("pk", "name", "model", "base_url")


# --- the conversation API (/api/inbox/conversations, the conversational seed's shapes) ----------------------

CONVERSATION_STATUSES = ("active", "completed", "archived")
# A conversation is active while its last question is within this window, as the Ask panel continues it.
ACTIVE_WINDOW = dt.timedelta(minutes=30)
SUMMARY_CHARS = 200


def conversation_status(conversation: AskConversation, last_at: dt.datetime | None, now: dt.datetime) -> str:
    if conversation.archived_at is not None:
        return "archived"
    latest = last_at or conversation.created_at
    return "active" if now - latest <= ACTIVE_WINDOW else "completed"


def conversations_page(
    *, user: Any, statuses: tuple[str, ...], limit: int, offset: int, now: dt.datetime
) -> tuple[list[tuple[AskConversation, dt.datetime, int, list[str]]], bool]:
    """The user's conversations, most recently active first, with their last activity, message count (each
    question and each finished answer) and questions (oldest first); and whether more follow."""
    rows = (
        AskConversation.objects.filter(owner=user)
        .annotate(
            last_at=Coalesce(Max("runs__created_at"), "created_at"),
            # Messages as the detail lists them: each question, and each finished run's answer.
            messages=Count("runs") + Count("runs", filter=Q(runs__status__in=[RunStatus.DONE, RunStatus.ERROR])),
        )
        .order_by("-last_at", "-pk")
    )
    threshold = now - ACTIVE_WINDOW
    by_status = {
        "archived": ~Q(archived_at=None),
        "active": Q(archived_at=None, last_at__gte=threshold),
        "completed": Q(archived_at=None, last_at__lt=threshold),
    }
    wanted = Q()
    for status in dict.fromkeys(statuses):
        wanted |= by_status[status]
    rows = rows.filter(wanted)
    found = list(rows[offset : offset + limit + 1])
    more = len(found) > limit
    found = found[:limit]
    questions: dict[Any, list[str]] = {}
    for conversation_id, question in (
        AskRun.objects.filter(conversation__in=found)
        .order_by("created_at", "pk")
        .values_list("conversation_id", "question")
    ):
        questions.setdefault(conversation_id, []).append(question)
    return [(c, c.last_at, c.messages, questions.get(c.pk, [])) for c in found], more


def conversation_summary(questions: list[str]) -> str:
    """What the conversation asked, from its own questions (no model writes it): the first one, and with
    more, the last one and how many there were."""
    if not questions:
        return ""
    first = questions[0][:SUMMARY_CHARS]
    if len(questions) == 1:
        return first
    return f"{first} … {questions[-1][:SUMMARY_CHARS]} ({len(questions)} questions)"
