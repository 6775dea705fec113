"""Orchestration configuration (Prompt, Director, Agent, settings; a director's model is apps.llm's ApiConfig)
and run records (Run, Conversation threads with canonical OpenAI-aligned transcripts, ProviderEvents, OrchLog,
Memory).

A Run is one (message, director) pair, unique, so routing may fire twice or race without duplicating
work. Run refers to its fetch cycle and matching filter by id only: orchestration never imports routing.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from apps.llm import ProviderEventData
from apps.llm.models import ApiConfig
from mailagent.crypto import EncryptedJSONField, EncryptedTextField, is_undecryptable

ROLE_CHOICES = [("system", "system"), ("user", "user"), ("assistant", "assistant"), ("tool", "tool")]


class Prompt(models.Model):
    """An ordered list of ChatML messages; `is_template` rows are the saved templates to start from."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="prompts")
    name = models.CharField(max_length=150)
    is_template = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-is_template", "name"]

    def __str__(self) -> str:
        return f"{self.name}{' (template)' if self.is_template else ''}"


class PromptMessage(models.Model):
    prompt = models.ForeignKey(Prompt, on_delete=models.CASCADE, related_name="messages")
    order = models.PositiveIntegerField(default=0)
    role = models.CharField(max_length=10, choices=ROLE_CHOICES, default="system")
    content = models.TextField(
        help_text="Variables: {{email}}, {{email.subject}}, {{email.from}}, {{email.to}}, {{email.date}}, "
        "{{email.body}}, {{director.name}}, {{agent.name}}, {{memories}}, {{today}}"
    )

    class Meta:
        ordering = ["order", "pk"]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:40]}"


class Director(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="directors")
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    enabled = models.BooleanField(default=True, help_text="Disabled directors receive no new runs.")
    prompt = models.ForeignKey(Prompt, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    imprint = models.TextField(blank=True, help_text="Extra standing instructions appended to the system prompt.")
    api_config = models.ForeignKey(
        ApiConfig,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="directors",
        help_text="Required to run: without it runs are skipped.",
    )
    accounts = models.ManyToManyField(
        "mail.MailAccount",
        blank=True,
        related_name="directors",
        help_text="Accounts whose calendar/to-do the tools may use (empty: all of the owner's accounts).",
    )
    memory_access = models.BooleanField(
        default=True, help_text="Director and its agents may read and write shared and global memories."
    )
    step_limit = models.PositiveIntegerField(default=12, help_text="Model calls per run before it is stopped.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="director_unique_name_per_owner")]
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


TOOL_HELP = (
    'Tools the agent may call, e.g. ["memory_add", "memory_search", "todo_add"]; '
    "workspace_* tools are always available. Empty: workspace tools only."
)


class Agent(models.Model):
    director = models.ForeignKey(Director, on_delete=models.CASCADE, related_name="agents")
    order = models.PositiveIntegerField(default=0)
    name = models.CharField(max_length=100)
    # Tool names may be 64 characters: "agent__" + 57.
    slug = models.SlugField(max_length=57, help_text="The director calls it as the tool agent__<slug>.")
    summary = models.CharField(max_length=300, blank=True, help_text="What the director is told this agent does.")
    prompt = models.ForeignKey(Prompt, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    imprint = models.TextField(blank=True)
    allowed_tools = models.JSONField(default=list, blank=True, help_text=TOOL_HELP)
    api_config = models.ForeignKey(
        ApiConfig,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="agents",
        help_text="Optional override; inherits the director's otherwise.",
    )
    step_limit = models.PositiveIntegerField(default=8)
    enabled = models.BooleanField(default=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["director", "slug"], name="agent_unique_slug_per_director")]
        ordering = ["order", "pk"]

    def __str__(self) -> str:
        return f"{self.name} ({self.director.name})" if self.director_id else self.name


class OrchestrationSettings(models.Model):
    """Singleton (pk=1), edited in the admin and read at every run, so changes need no restart.
    The filesystem tools' directory is per owner: see FilesystemRoot."""

    session_timeout_minutes = models.PositiveIntegerField(default=15)
    max_file_bytes = models.PositiveIntegerField(default=2 * 1024 * 1024)

    class Meta:
        verbose_name = "orchestration settings"
        verbose_name_plural = "orchestration settings"

    def __str__(self) -> str:
        return "Orchestration settings"


class FilesystemRoot(models.Model):
    """The directory one owner's runs may read with the filesystem tools. Without a row (or with an empty
    path) it is DATA_DIR/files/<owner id>; the tools are offered only while that directory exists."""

    owner = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="filesystem_root")
    path = models.CharField(
        max_length=1000,
        blank=True,
        help_text="Absolute directory the filesystem tools may read for this owner's runs. "
        "Empty: DATA_DIR/files/<owner id>. Only superusers can change it.",
    )

    class Meta:
        verbose_name = "filesystem root"

    def __str__(self) -> str:
        return f"filesystem root of user {self.owner_id}"


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    SKIPPED = "skipped", "Skipped"


class Run(models.Model):
    message = models.ForeignKey("mail.Message", on_delete=models.CASCADE, related_name="runs")
    director = models.ForeignKey(Director, on_delete=models.CASCADE, related_name="runs")
    fetch_cycle_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    # The first filter (in order) that routed the message to this director, and what it matched.
    filter_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    match = models.JSONField(default=dict, blank=True)
    trigger = models.CharField(max_length=16, default="route", help_text="route (new mail) or replay")
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED, db_index=True)
    status_reason = models.TextField(blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["message", "director"], name="run_unique_message_director")]
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"run {self.pk}: {self.director_id} ← message {self.message_id} ({self.status})"

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None

    @property
    def queue_requester(self) -> str:
        """How this run's model calls are named in the generation queue (apps/llm/queue.py)."""
        return f"run:{self.pk}"


def new_session_id() -> str:
    return uuid.uuid4().hex


class ThreadKind(models.TextChoices):
    DIRECTOR = "director", "Director"
    AGENT = "agent", "Agent"


class ThreadStatus(models.TextChoices):
    ONGOING = "ongoing", "Ongoing"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    EXPIRED = "expired", "Expired"


class Conversation(models.Model):
    """A director thread or an agent session: the canonical OpenAI-aligned transcript in `messages`, encrypted
    at rest (it holds the mail, the tools' results and the model's words)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="threads")
    kind = models.CharField(max_length=10, choices=ThreadKind.choices)
    director = models.ForeignKey(Director, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    agent_name = models.CharField(max_length=100, blank=True)
    parent = models.ForeignKey("self", on_delete=models.CASCADE, null=True, blank=True, related_name="children")
    session_id = models.CharField(max_length=40, unique=True, default=new_session_id)
    messages = EncryptedJSONField(default=list, blank=True)
    status = models.CharField(max_length=10, choices=ThreadStatus.choices, default=ThreadStatus.ONGOING)
    finalized = models.BooleanField(default=False, help_text="Only director threads are finalized.")
    created_at = models.DateTimeField(default=timezone.now)
    last_active_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.kind} thread {self.pk} ({self.status})"

    @property
    def transcript(self) -> list[dict[str, Any]]:
        """The messages to show: a transcript this process cannot decrypt reads as one note saying why."""
        if is_undecryptable(self.messages):
            return [{"role": "system", "content": self.messages["undecryptable"]}]
        return list(self.messages or [])

    def undecryptable_reason(self) -> str | None:
        """Why the transcript cannot be continued (its key is not configured, or it is damaged), or None."""
        return f"the transcript {self.messages['undecryptable']}" if is_undecryptable(self.messages) else None


class ProviderEvent(models.Model):
    """A provider request/response/error of a run's thread, or of a prompt tried in the playground (then
    `prompt` is set and run/thread are empty)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, null=True, blank=True, related_name="provider_events")
    thread = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, null=True, blank=True, related_name="provider_events"
    )
    prompt = models.ForeignKey(Prompt, on_delete=models.CASCADE, null=True, blank=True, related_name="provider_events")
    kind = models.CharField(max_length=10)  # request | response | error
    model = models.CharField(max_length=200, blank=True)
    attempt = models.PositiveIntegerField(default=1)
    status = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    usage = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    category = models.CharField(max_length=20, blank=True)
    payload = EncryptedJSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    # Owned through its run, or through the prompt it was tried with (admin scoping, mailagent/admin_scoping.py).
    owner_lookups = ("run__director__owner", "prompt__owner")

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.kind} {self.model} ({self.created_at:%H:%M:%S})"

    @classmethod
    def from_data(cls, event: ProviderEventData, **links: Any) -> ProviderEvent:
        """An unsaved row for what apps.llm reported, linked to its run/thread or prompt (`links`)."""
        return cls(**cls.values_from_data(event, **links))

    @staticmethod
    def values_from_data(event: ProviderEventData, **links: Any) -> dict[str, Any]:
        """The same row as {attname: value} for mailagent.bulk.insert_values (links by id: `run_id=`…),
        stamped now, when the event happened."""
        return {
            "kind": event.kind,
            "model": event.model[:200],
            "attempt": event.attempt,
            "status": event.status,
            "latency_ms": event.latency_ms,
            "usage": event.usage,
            "error": event.error,
            "category": event.category,
            "payload": event.payload,
            "created_at": timezone.now(),
            **links,
        }


class Phase(models.TextChoices):
    DIRECTOR = "director", "Director"
    AGENT = "agent", "Agent"
    TOOL = "tool", "Tool"
    RESULT = "result", "Result"


class OrchLog(models.Model):
    """Structured orchestration diagnostics (spec 3.2.0c); detail/result encrypted like other secrets."""

    timestamp = models.DateTimeField(default=timezone.now, db_index=True)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="logs")
    fetch_cycle_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    director = models.ForeignKey(Director, on_delete=models.CASCADE, related_name="+")
    director_name = models.CharField(max_length=100, blank=True)
    agent = models.ForeignKey(Agent, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    agent_name = models.CharField(max_length=100, blank=True)
    email_summary = models.CharField(max_length=500, blank=True)
    phase = models.CharField(max_length=10, choices=Phase.choices)
    dir_thread = models.ForeignKey(Conversation, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    agent_thread = models.ForeignKey(Conversation, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    detail = EncryptedJSONField(null=True, blank=True)
    result = EncryptedJSONField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["timestamp", "pk"]
        verbose_name = "orchestration log entry"
        verbose_name_plural = "orchestration log"

    def __str__(self) -> str:
        return f"{self.timestamp:%H:%M:%S} {self.phase} {self.director_name}/{self.agent_name}"


class MemoryScope(models.TextChoices):
    LOCAL = "local", "Local (one agent, or the director itself)"
    SHARED = "shared", "Shared (a director and its agents)"
    GLOBAL = "global", "Global (every director)"


class Memory(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memories")
    scope = models.CharField(max_length=10, choices=MemoryScope.choices, default=MemoryScope.LOCAL)
    director = models.ForeignKey(Director, on_delete=models.CASCADE, null=True, blank=True, related_name="memories")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, null=True, blank=True, related_name="memories")
    # Encrypted at rest: searched in Python after the visibility filter (apps.orchestration.tools.memory).
    content = EncryptedTextField()
    tags = models.JSONField(default=list, blank=True)
    source_run = models.ForeignKey(Run, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-updated_at", "-pk"]
        verbose_name_plural = "memories"

    def __str__(self) -> str:
        return f"[{self.scope}] {self.content[:60]}"

    def matches(self, words: Sequence[str]) -> bool:
        """Every word occurs in the content, ignoring case. The content is encrypted at rest, so searches
        run here over the decrypted rows, not as SQL; a memory this process cannot decrypt matches nothing."""
        if is_undecryptable(self.content):
            return False
        folded = self.content.casefold()
        return all(word.casefold() in folded for word in words)


class ApprovalStatus(models.TextChoices):
    PENDING = "pending", "Waiting for your decision"
    SENDING = "sending", "Being performed"
    DONE = "done", "Approved and performed"
    FAILED = "failed", "Approved, but performing it failed"
    REJECTED = "rejected", "Rejected"


class Approval(models.Model):
    """Something a tool would do that reaches other people (today: a calendar event with attendees, whose
    invitations the provider sends). The tool stores exactly the request it would make and does nothing;
    only the user's approval performs it (apps.orchestration.actions.approve)."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="approvals")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, null=True, blank=True, related_name="approvals")
    account = models.ForeignKey("mail.MailAccount", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=30, default="calendar_event")
    provider = models.CharField(max_length=20)
    calendar = models.CharField(max_length=200, help_text="Which calendar the event goes to.")
    summary = models.CharField(max_length=300)
    attendees = models.JSONField(default=list)
    # The exact request: {"method", "path", "params", "json"}; the event is mail-derived, so encrypted.
    request = EncryptedJSONField()
    status = models.CharField(max_length=10, choices=ApprovalStatus.choices, default=ApprovalStatus.PENDING)
    error = models.TextField(blank=True)
    result = models.JSONField(default=dict, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    inbox_entry_id = models.UUIDField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)
    attempt_started_at = models.DateTimeField(null=True, blank=True)
    performed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["owner", "status"], name="approval_owner_status")]

    def __str__(self) -> str:
        return f"{self.kind}: {self.summary} ({self.status})"
