"""Ask conversations in the conversational seed's shapes (issue 35, item 5), mounted at /api/inbox/conversations:

- GET  /api/inbox/conversations?status=active,completed,archived&limit=20&cursor=… — newest activity first.
- GET  /api/inbox/conversations/<id>?limit=50 — with its messages: each question is a `user` message and each
  finished run an `agent` message (the answer, its evidence, the run's intent, mode and timings).
- POST /api/inbox/conversations {message?} — a new conversation; with a message, its first question starts.
- POST /api/inbox/conversations/<id>/messages {type: "text", content: {text}} — a question in it (202).
- POST /api/inbox/conversations/<id>/archive — kept and readable, out of the Ask panel, closed to questions.

A question runs exactly as POST /api/ask does (same rate limit, same runner, same websocket for progress).
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any, Literal

from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from ninja import Field, Query, Router, Schema, Status
from ninja.errors import HttpError

from apps.ask import actions, selectors
from apps.ask.api import RateLimitedOut
from apps.ask.models import AnswerMode, AskConversation, AskRun, RunStatus
from apps.ask.runner import start_ask_run
from mailagent import ratelimit
from mailagent.api import ErrorOut

router = Router(tags=["ask"])
MAX_CONVERSATIONS = 100
MAX_MESSAGES = 200
# The seed's message types: an answer that lists library files is a search result; every other answer is text.
AGENT_TYPES = {AnswerMode.FILES: "search_result"}


class ConversationOut(Schema):
    id: str
    createdAt: str
    updatedAt: str = Field(description="When its last question was asked (its creation when none was)")
    status: Literal["active", "completed", "archived"] = Field(
        description="active: its last question is within the last 30 minutes; completed: older; archived"
    )
    summary: str = Field(description="Its first question, and with more, its last one and how many (no model)")
    messageCount: int = Field(description="Questions and finished answers in it")


class ConversationListOut(Schema):
    conversations: list[ConversationOut]
    nextCursor: str | None = Field(None, description="Pass as cursor for the next page; null on the last one")


class MessageOut(Schema):
    id: str
    role: Literal["user", "agent"]
    type: Literal["text", "search_result"]
    content: dict[str, Any] = Field(description="user: {text}; agent: {text, evidence}")
    metadata: dict[str, Any] = Field(description="runId, status, intent, answerMode, timings, error")
    createdAt: str


class ConversationDetailOut(ConversationOut):
    messages: list[MessageOut]
    truncated: bool = Field(description="True when only the latest `limit` messages are shown")


class MessageIn(Schema):
    type: Literal["text"] = "text"
    # Checked in the view, after the conversation's owner: another user's conversation is a 404 whatever the body.
    content: dict[str, str] = Field(default_factory=dict, description='{"text": "your question"} (required)')


class CreateIn(Schema):
    message: str | None = Field(None, max_length=actions.MAX_QUESTION_CHARS, description="An optional first question")


class StartedOut(Schema):
    conversation: ConversationOut
    runId: str | None = Field(None, description="The run answering the first message (null without one)")
    websocket: str | None = Field(None, description="Progress of that run")


class MessageStartedOut(Schema):
    conversationId: str
    runId: str
    messageId: str
    websocket: str


def _statuses(raw: str) -> tuple[str, ...]:
    wanted = tuple(part.strip() for part in raw.split(",") if part.strip())
    unknown = [s for s in wanted if s not in selectors.CONVERSATION_STATUSES]
    if unknown or not wanted:
        raise HttpError(422, f"status is a comma-separated list of {', '.join(selectors.CONVERSATION_STATUSES)}")
    return wanted


def _offset(cursor: str | None) -> int:
    if not cursor:
        return 0
    if not cursor.isdigit() or len(cursor) > 9:
        raise HttpError(422, "cursor is not one this API gave: start again without it")
    return int(cursor)


def _conversation_out(conversation: AskConversation, runs: list[AskRun], now: dt.datetime) -> dict[str, Any]:
    last_at = max((run.created_at for run in runs), default=None)
    return {
        "id": str(conversation.pk),
        "createdAt": conversation.created_at.isoformat(),
        "updatedAt": (last_at or conversation.created_at).isoformat(),
        "status": selectors.conversation_status(conversation, last_at, now),
        "summary": selectors.conversation_summary([run.question for run in runs]),
        "messageCount": sum(2 if run.status in (RunStatus.DONE, RunStatus.ERROR) else 1 for run in runs),
    }


def _messages(run: AskRun) -> list[dict[str, Any]]:
    shown = selectors.run_json(run)
    metadata = {
        "runId": shown["runId"],
        "status": run.status,
        "intent": run.intent,
        "answerMode": run.answer_mode,
        "timings": shown["timings"],
        "error": run.error,
    }
    out = [
        {
            "id": f"{run.pk}:question",
            "role": "user",
            "type": "text",
            "content": {"text": run.question},
            "metadata": metadata,
            "createdAt": run.created_at.isoformat(),
        }
    ]
    if run.status in (RunStatus.DONE, RunStatus.ERROR):
        out.append(
            {
                "id": f"{run.pk}:answer",
                "role": "agent",
                "type": AGENT_TYPES.get(run.answer_mode, "text"),  # type: ignore[call-overload]
                "content": {"text": run.answer or run.error, "evidence": shown["evidence"]},
                "metadata": metadata,
                "createdAt": (run.finished_at or run.created_at).isoformat(),
            }
        )
    return out


def _start(request: HttpRequest, response: HttpResponse, conversation: AskConversation, text: str) -> AskRun | Status:
    try:
        ratelimit.hit(action="ask", user_id=request.user.pk)
    except ratelimit.RateLimited as exc:
        response["Retry-After"] = str(exc.retry_after)
        return Status(429, {"error": str(exc), "retryAfter": exc.retry_after})
    try:
        run = actions.create_ask_run(owner=request.user, question=text, conversation=conversation)
    except actions.ConversationArchived as exc:
        raise HttpError(409, str(exc)) from exc
    except actions.AskInputError as exc:
        raise HttpError(422, str(exc)) from exc
    start_ask_run(run.pk, asgi=isinstance(request, ASGIRequest))
    return run


@router.get("", response={200: ConversationListOut}, summary="Your Ask conversations, newest activity first")
def list_conversations(
    request: HttpRequest,
    status: str = Query("active,completed", description="Comma-separated: active, completed, archived"),
    limit: int = Query(20, ge=1, le=MAX_CONVERSATIONS),
    cursor: str | None = Query(None, max_length=20),
) -> dict[str, Any]:
    offset = _offset(cursor)
    now = timezone.now()
    rows, more = selectors.conversations_page(
        user=request.user, statuses=_statuses(status), limit=limit, offset=offset, now=now
    )
    conversations = []
    for conversation, last_at, count, questions in rows:
        conversations.append(
            {
                "id": str(conversation.pk),
                "createdAt": conversation.created_at.isoformat(),
                "updatedAt": last_at.isoformat(),
                "status": selectors.conversation_status(conversation, last_at if questions else None, now),
                "summary": selectors.conversation_summary(questions),
                "messageCount": count,
            }
        )
    return {"conversations": conversations, "nextCursor": str(offset + limit) if more else None}


@router.get("/{conversation_id}", response={200: ConversationDetailOut}, summary="A conversation with its messages")
def get_conversation(
    request: HttpRequest, conversation_id: uuid.UUID, limit: int = Query(50, ge=1, le=MAX_MESSAGES)
) -> dict[str, Any]:
    conversation = selectors.access_conversation(user=request.user, conversation_id=conversation_id)
    runs = list(selectors.conversation_runs(conversation=conversation))
    messages = [message for run in runs for message in _messages(run)]
    return {
        **_conversation_out(conversation, runs, timezone.now()),
        "messages": messages[-limit:],
        "truncated": len(messages) > limit,
    }


@router.post("", response={201: StartedOut, 429: RateLimitedOut}, summary="Start a conversation")
def create_conversation(request: HttpRequest, payload: CreateIn, response: HttpResponse) -> Status:
    text = " ".join((payload.message or "").split())
    conversation = actions.start_conversation(owner=request.user)
    run = None
    if text:
        started = _start(request, response, conversation, text)
        if isinstance(started, Status):
            return started
        run = started
    runs = [run] if run is not None else []
    return Status(
        201,
        {
            "conversation": _conversation_out(conversation, runs, timezone.now()),
            "runId": str(run.pk) if run else None,
            "websocket": f"/ws/ask/{run.pk}/" if run else None,
        },
    )


@router.post(
    "/{conversation_id}/messages",
    response={202: MessageStartedOut, 409: ErrorOut, 429: RateLimitedOut},
    summary="Ask a question in a conversation",
)
def add_message(request: HttpRequest, conversation_id: uuid.UUID, payload: MessageIn, response: HttpResponse) -> Status:
    conversation = selectors.access_conversation(user=request.user, conversation_id=conversation_id)
    text = " ".join(str(payload.content.get("text") or "").split())
    if not text:
        raise HttpError(422, 'content.text is required: {"type": "text", "content": {"text": "your question"}}')
    started = _start(request, response, conversation, text)
    if isinstance(started, Status):
        return started
    return Status(
        202,
        {
            "conversationId": str(conversation.pk),
            "runId": str(started.pk),
            "messageId": f"{started.pk}:question",
            "websocket": f"/ws/ask/{started.pk}/",
        },
    )


@router.post("/{conversation_id}/archive", response={200: ConversationOut}, summary="Archive a conversation")
def archive(request: HttpRequest, conversation_id: uuid.UUID) -> dict[str, Any]:
    conversation = selectors.access_conversation(user=request.user, conversation_id=conversation_id)
    actions.archive_conversation(conversation=conversation)
    runs = list(selectors.conversation_runs(conversation=conversation))
    return _conversation_out(conversation, runs, timezone.now())
