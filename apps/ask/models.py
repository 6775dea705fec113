"""Ask Inbox: conversations of mailbox questions, one AskRun per question, and the reviewable drafts an
Ask run may create. Progress events are not stored here (they are transient, see events.py); a run keeps
its step list with timings so a reloaded transcript shows what was done."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone


class AskConversation(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="ask_conversations")
    created_at = models.DateTimeField(default=timezone.now)
    # Archived (POST /api/inbox/conversations/<id>/archive): kept and readable, no longer offered in the Ask
    # panel's list or continued, and no question can be added to it.
    archived_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"conversation {self.id}"


class RunStatus(models.TextChoices):
    PENDING = "pending", "Waiting"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    ERROR = "error", "Error"


class Intent(models.TextChoices):
    QUESTION = "question", "Question"
    FOLLOW_UP_DRAFTS = "follow_up_drafts", "Follow-up drafts"
    UNSUPPORTED = "unsupported", "Unsupported action"
    # One conversation over mail and library files (apps/ask/file_pipeline.py).
    QUERY_FILES = "query_files", "Find library files"
    CONFIRM = "confirm", "Yes to a folder suggestion"
    REJECT = "reject", "No to a folder suggestion"
    CHOOSE = "choose", "Another folder for a suggestion"
    ORGANIZE = "organize", "Organize the library inbox"
    SAVE = "save", "Save into the library"
    CHAT = "chat", "Chat"


class AnswerMode(models.TextChoices):
    NONE = "", "—"
    LLM = "llm", "Language model"
    EXTRACTIVE = "extractive", "Extractive"
    NO_EVIDENCE = "no_evidence", "No reliable evidence"
    REFUSAL = "refusal", "Refusal"
    DRAFTS = "drafts", "Drafts created"
    FILES = "files", "Library files"
    ACTION = "action", "Library request done"
    CHAT = "chat", "Chat reply"


class AskRun(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    conversation = models.ForeignKey(AskConversation, on_delete=models.CASCADE, related_name="runs")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="ask_runs")
    question = models.TextField()
    # Restrict the run to one of the owner's accounts (by name); blank = every account.
    account_name = models.CharField(max_length=100, blank=True)
    # "Ask about this thread": only this thread's messages are evidence; null = the accounts above.
    thread = models.ForeignKey("mail.Thread", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    status = models.CharField(max_length=10, choices=RunStatus.choices, default=RunStatus.PENDING)
    intent = models.CharField(max_length=20, choices=Intent.choices, blank=True)
    answer = models.TextField(blank=True)
    answer_mode = models.CharField(max_length=12, choices=AnswerMode.choices, blank=True)
    # The plan (entities, hints, date range, variants), the evidence rows, the searched scope (sources,
    # counts, provider and extraction failures, citation check) and per-step timings: all JSON.
    plan = models.JSONField(default=dict, blank=True)
    evidence = models.JSONField(default=list, blank=True)
    scope = models.JSONField(default=dict, blank=True)
    steps = models.JSONField(default=list, blank=True)
    timings = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The web server process the run was handed to (mailagent.liveness identity): when that process is gone
    # the stalled-run sweeper fails the run at once instead of after STALLED_AFTER (apps/ask/runner.py).
    worker = models.CharField(max_length=255, blank=True)

    class Meta:
        ordering = ["created_at"]
        indexes = [
            models.Index(fields=["conversation", "created_at"], name="ask_run_conversation"),
            models.Index(fields=["status"], name="ask_run_status"),
        ]

    def __str__(self) -> str:
        return self.question[:80]

    @property
    def is_finished(self) -> bool:
        return self.status in (RunStatus.DONE, RunStatus.ERROR)


class Draft(models.Model):
    """A reply written by Ask for the user to review; Ask never sends it (there is no send path at all)."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="ask_drafts")
    account = models.ForeignKey("mail.MailAccount", on_delete=models.CASCADE, related_name="ask_drafts")
    thread = models.ForeignKey("mail.Thread", on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    in_reply_to = models.ForeignKey("mail.Message", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    ask_run = models.ForeignKey(AskRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="drafts")
    to = models.JSONField(default=list, blank=True)
    cc = models.JSONField(default=list, blank=True)
    subject = models.CharField(max_length=998, blank=True)
    body = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["owner", "thread"], name="ask_draft_owner_thread")]

    def __str__(self) -> str:
        return self.subject or f"draft {self.pk}"


class AskSettings(models.Model):
    """Per user: the language model Ask answers with (an ApiConfig from Settings → Models). None: the
    server-wide MAILAGENT_ASK_LLM_* environment fallback if set, else extractive answers."""

    owner = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="ask_settings")
    api_config = models.ForeignKey("llm.ApiConfig", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"Ask settings of {self.owner_id}"
