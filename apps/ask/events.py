"""Ask progress events: transient, run-scoped, UI-only telemetry. They go to the channel-layer group of
their run and nowhere else — never to mailbox or automation events, which can trigger other work."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any, Literal, NotRequired, TypedDict

# "queue": the run's model call waits in the model's line (payload: waiting, ahead, generating) or its turn came.
EventType = Literal["started", "step_started", "step_completed", "queue", "completed", "error"]
EventStatus = Literal["running", "done", "error", "skipped"]


class AskEvent(TypedDict):
    runId: str
    timestamp: str
    type: EventType
    stepId: str
    label: str
    detail: str
    status: EventStatus
    payload: NotRequired[dict[str, Any]]


Emit = Callable[[AskEvent], None]


def ask_group(run_id: object) -> str:
    """The channel-layer group of one run (group names allow only ASCII letters, digits, - _ .)."""
    return f"ask.{run_id}"


def make_event(
    run_id: object,
    type_: EventType,
    *,
    step_id: str = "",
    label: str = "",
    detail: str = "",
    status: EventStatus = "running",
    payload: dict[str, Any] | None = None,
) -> AskEvent:
    event = AskEvent(
        runId=str(run_id),
        timestamp=dt.datetime.now(dt.UTC).isoformat(),
        type=type_,
        stepId=step_id,
        label=label,
        detail=detail,
        status=status,
    )
    if payload is not None:
        event["payload"] = payload
    return event


def discard(event: AskEvent) -> None:
    """An emitter for runs nobody watches (benchmarks)."""
