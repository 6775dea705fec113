"""The frame of an Ask run, shared by the mail steps (pipeline.py, search_steps.py) and the library steps
(file_pipeline.py): the run's context, the step tracker that emits step_started / step_completed and times each
step, and the outcome the run stores. It calls no step and no action."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from apps.accounts.models import MailAccount
from apps.ask.events import Emit, EventStatus, make_event
from apps.ask.planner import PreviousTurn
from apps.llm import LLMConfig

# Every step a run can show, in order (the page pre-renders them so live updates only replace rows).
STEPS: tuple[tuple[str, str], ...] = (
    ("classify", "Understanding the request"),
    ("topic", "Checking whether it follows the previous question"),
    ("plan", "Planning the search"),
    ("local_fts", "Searching local mail for the words"),
    ("local_vector", "Searching local mail by meaning"),
    ("hybrid", "Ranking words and meaning together"),
    ("provider_search", "Searching Gmail / Outlook"),
    ("gist", "Comparing what each mail is about with the question"),
    ("attachment_text", "Reading attachments"),
    ("rerank", "Ranking the evidence"),
    ("read_evidence", "Reading the best matches"),
    ("search_files", "Searching your library files"),
    ("decide", "Applying your decision"),
    ("organize", "Scanning the library inbox"),
    ("save_file", "Saving into the library inbox"),
    ("find_threads", "Finding threads that wait for a reply"),
    ("create_drafts", "Creating reviewable drafts"),
    ("answer", "Answering"),
)
STEP_LABELS = dict(STEPS)


@dataclass(slots=True)
class StepRecord:
    stepId: str
    label: str
    detail: str = ""
    status: EventStatus = "running"
    ms: int = 0


@dataclass(slots=True)
class AskContext:
    run_id: str
    owner: Any
    question: str
    accounts: list[MailAccount]
    now: dt.datetime
    emit: Emit
    llm: LLMConfig | None = None
    history: list[PreviousTurn] = field(default_factory=list)
    history_answers: list[tuple[str, str]] = field(default_factory=list)
    # Set when drafts should be linked to a stored run.
    ask_run_id: Any = None
    # "Ask about this thread": only this thread's messages are evidence.
    thread_id: int | None = None
    # The owner's library has files: a mail question also shows the files that contain its words.
    library_files: bool = False


@dataclass(slots=True)
class AskOutcome:
    intent: str
    answer: str
    answer_mode: str
    plan: dict[str, Any]
    evidence: list[dict[str, Any]]
    scope: dict[str, Any]
    steps: list[dict[str, Any]]
    timings: dict[str, int]


class StepTracker:
    def __init__(self, run_id: str, emit: Emit) -> None:
        self.run_id = run_id
        self.emit = emit
        self.records: list[StepRecord] = []

    @contextmanager
    def step(self, step_id: str) -> Iterator[StepRecord]:
        record = StepRecord(stepId=step_id, label=STEP_LABELS[step_id])
        self.records.append(record)
        self.emit(make_event(self.run_id, "step_started", step_id=step_id, label=record.label, status="running"))
        started = time.perf_counter()
        try:
            yield record
        except Exception as exc:
            record.ms = int((time.perf_counter() - started) * 1000)
            record.status = "error"
            record.detail = record.detail or f"{type(exc).__name__}: {exc}"[:300]
            self.emit(
                make_event(
                    self.run_id,
                    "step_completed",
                    step_id=step_id,
                    label=record.label,
                    detail=record.detail,
                    status="error",
                )
            )
            raise
        record.ms = int((time.perf_counter() - started) * 1000)
        record.status = "skipped" if record.status == "skipped" else "done"
        self.emit(
            make_event(
                self.run_id,
                "step_completed",
                step_id=step_id,
                label=record.label,
                detail=record.detail,
                status=record.status,
                payload={"ms": record.ms},
            )
        )

    def steps_json(self) -> list[dict[str, Any]]:
        return [
            {"stepId": r.stepId, "label": r.label, "detail": r.detail, "status": r.status, "ms": r.ms}
            for r in self.records
        ]

    def timings(self) -> dict[str, int]:
        return {r.stepId: r.ms for r in self.records}


def make_outcome(
    tracker: StepTracker,
    started: float,
    intent: str,
    answer: str,
    mode: str,
    plan: dict[str, Any],
    evidence: list[dict[str, Any]],
    scope: dict[str, Any],
) -> AskOutcome:
    timings = tracker.timings()
    timings["total"] = int((time.perf_counter() - started) * 1000)
    return AskOutcome(
        intent=intent,
        answer=answer,
        answer_mode=mode,
        plan=plan,
        evidence=evidence,
        scope=scope,
        steps=tracker.steps_json(),
        timings=timings,
    )
