"""POST /api/ask {question, conversationId?} → {runId}; GET /api/ask/<runId> → the run."""

from __future__ import annotations

import uuid
from typing import Any

from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, HttpResponse
from ninja import Field, Router, Schema, Status
from ninja.errors import HttpError

from apps.ask import actions, selectors
from apps.ask.runner import start_ask_run
from mailagent import ratelimit

router = Router(tags=["ask"])


class AskIn(Schema):
    question: str = Field(min_length=1, max_length=actions.MAX_QUESTION_CHARS)
    conversationId: uuid.UUID | None = None
    account: str | None = Field(None, description="Only this account (its name)")


class AskStarted(Schema):
    runId: str
    conversationId: str
    websocket: str


class RateLimitedOut(Schema):
    error: str
    retryAfter: int = Field(description="Seconds until a new run may be started (also in Retry-After)")


@router.post("", response={202: AskStarted, 429: RateLimitedOut}, summary="Ask your mailbox a question")
def ask(request: HttpRequest, payload: AskIn, response: HttpResponse) -> Status:
    try:
        ratelimit.hit(action="ask", user_id=request.user.pk)
    except ratelimit.RateLimited as exc:
        response["Retry-After"] = str(exc.retry_after)
        return Status(429, {"error": str(exc), "retryAfter": exc.retry_after})
    conversation = None
    if payload.conversationId is not None:
        conversation = selectors.access_conversation(user=request.user, conversation_id=payload.conversationId)
    try:
        run = actions.create_ask_run(
            owner=request.user,
            question=payload.question,
            conversation=conversation,
            account_name=(payload.account or "").strip(),
        )
    except actions.AskInputError as exc:
        raise HttpError(422, str(exc)) from exc
    start_ask_run(run.pk, asgi=isinstance(request, ASGIRequest))
    return Status(
        202,
        {"runId": str(run.pk), "conversationId": str(run.conversation_id), "websocket": f"/ws/ask/{run.pk}/"},
    )


@router.get("/{run_id}", summary="An Ask run: status, answer, evidence, scope, timings")
def ask_run(request: HttpRequest, run_id: str) -> dict[str, Any]:
    return selectors.run_json(selectors.access_run(user=request.user, run_id=run_id))
